"""The trusted builders' validated way (a str subclass among the values): every field reaches
the validating constructor, and a str subclass in any one text field sends the whole value that
way (tests/test_assembly_trusted.py has the unvalidated way)."""

from __future__ import annotations

import numpy as np
import pytest

from groundwire import Context, RagTurn
from groundwire.assembly._trusted import trusted_context, trusted_turn

TRACE = "0123456789abcdef0123456789abcdef"
SPAN = "0123456789abcdef"


def test_a_validated_context_keeps_every_field() -> None:
    """Id, score, rank and metadata reach `Context` as given, beside the plain text."""
    built = trusted_context(np.str_("doc"), "d1", 0.5, 2, {"k": [1]})  # type: ignore[arg-type]
    assert built == Context(text="doc", id="d1", score=0.5, rank=2, metadata={"k": [1]})
    assert built.model_fields_set == {"text", "id", "score", "rank", "metadata"}


@pytest.mark.parametrize("field", ["query", "answer", "attribute"])
def test_a_str_subclass_in_any_text_field_validates_the_turn(field: str) -> None:
    """Query, answer or an attribute value: whichever is a str subclass comes out a plain str,
    and every other field is kept as given."""
    texts: dict[str, str] = {"query": "q?", "answer": "ans", "attribute": "app"}
    texts[field] = np.str_(texts[field])
    contexts = (trusted_context("a", None, None, 0, {}),)
    built = trusted_turn(
        texts["query"], contexts, texts["answer"], TRACE, SPAN, {"service.name": texts["attribute"]}
    )
    assert type(built.query) is str and type(built.answer) is str
    assert type(built.attributes["service.name"]) is str
    validated = RagTurn(
        query="q?",
        contexts=contexts,
        answer="ans",
        trace_id=TRACE,
        span_id=SPAN,
        attributes={"service.name": "app"},
    )
    assert built == validated
    assert built.model_fields_set == validated.model_fields_set
