"""`Context` and `RagTurn` built from values the assembler has already checked, unvalidated.

Pydantic validates every field on construction; on the offline read path that was a third of the
cost of assembling a turn (four documents and the turn itself), for values that are valid by
construction here: `_documents.document` checks each document field itself, and a turn's parts
come from `SpanRecord`s (checked ids) and the text extractors (strings). These builders set the
fields as pydantic's own `model_construct` does (the same `__dict__`, the same set of fields given,
no extras, no private state), without its slower Python-level defaults handling, so the objects
are equal, dump the same and pickle the same as validated ones (tests/test_assembly_trusted.py).
Anything not checked first must go through the validating constructors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeVar

from pydantic import BaseModel

from groundwire._types import AttributeValue, Context, RagTurn

__all__ = ["trusted_context", "trusted_turn"]

_set: Final = object.__setattr__
_new: Final = object.__new__
_Model = TypeVar("_Model", Context, RagTurn)
_CONTEXT_FIELDS: Final = frozenset({"text", "id", "score", "rank", "metadata"})
_TURN_FIELDS: Final = frozenset(
    {"query", "contexts", "answer", "trace_id", "span_id", "attributes"}
)
"""The fields `build_turn` gives (`expected` keeps its default, as when validated)."""


_SLOTS: Final = BaseModel.__dict__
_set_fields_set: Final = _SLOTS["__pydantic_fields_set__"].__set__
_set_extra: Final = _SLOTS["__pydantic_extra__"].__set__
_set_private: Final = _SLOTS["__pydantic_private__"].__set__
"""BaseModel's own slots, set directly (as `model_construct` sets them, a lookup less each)."""


def _built(cls: type[_Model], values: dict[str, Any], given: frozenset[str]) -> _Model:
    """An instance of `cls` holding `values` (every field, in field order), `given` as set."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set_fields_set(model, set(given))
    _set_extra(model, None)
    _set_private(model, None)
    return model


def _plain(*texts: object) -> bool:
    """True when every value is exactly a str (what pydantic's str validation keeps as is)."""
    return set(map(type, texts)) <= {str}


def trusted_context(
    text: str, doc_id: str | None, score: float | None, rank: int, metadata: dict[str, Any]
) -> Context:
    """`Context(text=..., id=..., score=..., rank=..., metadata=...)` for checked values: a str
    text, a str or None id, a finite float or None score, a rank >= 0, a fresh str-keyed dict.
    A str subclass (numpy's `str_`) is validated: pydantic gives a plain str for it."""
    if type(text) is not str:
        return Context(text=text, id=doc_id, score=score, rank=rank, metadata=metadata)
    values = {"text": text, "id": doc_id, "score": score, "rank": rank, "metadata": metadata}
    return _built(Context, values, _CONTEXT_FIELDS)


def trusted_turn(
    query: str,
    contexts: tuple[Context, ...],
    answer: str,
    trace_id: str,
    span_id: str,
    attributes: Mapping[str, AttributeValue],
) -> RagTurn:
    """`RagTurn(query=..., contexts=..., answer=..., trace_id=..., span_id=..., attributes=...)`
    for checked values: str texts, `Context`s ranked 0, 1, ... in order, a span's (checked) ids,
    string attributes. A str subclass anywhere is validated: pydantic gives a plain str for it."""
    if not _plain(query, answer, *attributes.values()):
        return RagTurn(
            query=query,
            contexts=contexts,
            answer=answer,
            trace_id=trace_id,
            span_id=span_id,
            attributes=attributes,
        )
    values = {
        "query": query,
        "contexts": contexts,
        "answer": answer,
        "expected": None,
        "trace_id": trace_id,
        "span_id": span_id,
        "attributes": dict(attributes),
    }
    return _built(RagTurn, values, _TURN_FIELDS)
