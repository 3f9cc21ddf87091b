"""The assembler's unvalidated `Context` / `RagTurn` builders give what validation gives."""

from __future__ import annotations

import pickle

import numpy as np

from groundwire import Context, RagTurn
from groundwire.assembly._trusted import trusted_context, trusted_turn

TRACE = "0123456789abcdef0123456789abcdef"
SPAN = "0123456789abcdef"


def _same(built: Context | RagTurn, validated: Context | RagTurn) -> None:
    assert built == validated
    assert type(built) is type(validated)
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump() == validated.model_dump()
    assert built.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert built.model_dump_json() == validated.model_dump_json()
    assert pickle.loads(pickle.dumps(built)) == validated
    assert list(built.__dict__) == list(validated.__dict__)


def test_context_is_the_validated_one() -> None:
    """A trusted Context equals, dumps and pickles as the validated Context."""
    fields = {"text": "doc", "id": "d1", "score": 0.5, "rank": 2, "metadata": {"k": [1]}}
    built = trusted_context("doc", "d1", 0.5, 2, {"k": [1]})
    _same(built, Context(**fields))  # type: ignore[arg-type]
    bare = Context(text="doc", id=None, score=None, rank=0, metadata={})  # as document() gave
    _same(trusted_context("doc", None, None, 0, {}), bare)


def test_turn_is_the_validated_one() -> None:
    """A trusted RagTurn equals the validated one, `expected` left unset as build_turn leaves it."""
    contexts = (trusted_context("a", None, None, 0, {}), trusted_context("b", "x", 1.0, 1, {}))
    attributes = {"service.name": "app", "gen_ai.request.model": "m"}
    built = trusted_turn("q?", contexts, "ans", TRACE, SPAN, attributes)
    validated = RagTurn(
        query="q?",
        contexts=contexts,
        answer="ans",
        trace_id=TRACE,
        span_id=SPAN,
        attributes=attributes,
    )
    _same(built, validated)
    assert built.attributes is not attributes
    assert RagTurn.from_json(built.to_json()) == built


def test_str_subclasses_become_plain_str() -> None:
    """A str subclass (numpy's str_) is validated, so the fields hold plain str as before."""
    text = np.str_("doc")
    context = trusted_context(text, None, None, 0, {})  # type: ignore[arg-type]
    assert type(context.text) is str
    turn = trusted_turn(np.str_("q"), (), "a", TRACE, SPAN, {"service.name": np.str_("s")})  # type: ignore[arg-type]
    assert type(turn.query) is str
    assert type(turn.attributes["service.name"]) is str
