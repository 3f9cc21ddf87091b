"""Build `Context`s from one document's fields, each malformed field skipped on its own."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from groundwire import semconv
from groundwire._numbers import finite_float
from groundwire._types import Context
from groundwire.assembly._extract import decode
from groundwire.assembly._record import SpanRecord
from groundwire.assembly._trusted import trusted_context

__all__ = ["document", "document_list", "metadata"]

logger = logging.getLogger("groundwire.assembly")

_TEXT_KEYS: Final = ("content", "text", "page_content", "document")
"""Where a document object keeps its text, in the order tried."""


def document(
    record: SpanRecord, where: str, fields: Mapping[str, Any], rank: int
) -> Context | None:
    """One `Context` from a document's `content`, `id`, `score`, `metadata` fields, or None."""
    text = fields.get("content")
    if not isinstance(text, str):
        logger.debug("span %s: %s has no text content; document skipped", record.span_id, where)
        return None
    doc_id = fields.get("id")
    if doc_id is not None and type(doc_id) is not str:  # plain strings, the usual ids, as they are
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int):
            logger.debug("span %s: %s.id is not a string or int; dropped", record.span_id, where)
            doc_id = None
        else:
            doc_id = str(doc_id)
    raw = fields.get("score")
    value = None if raw is None else finite_float(raw)
    if raw is not None and value is None:
        logger.debug("span %s: %s.score is not a number; dropped", record.span_id, where)
    raw = fields.get("metadata")
    meta = None if raw is None else metadata(raw)
    if raw is not None and meta is None:
        logger.debug("span %s: %s.metadata is not a JSON object; dropped", record.span_id, where)
    # Every field is checked above: built without pydantic's validation (`_trusted`).
    return trusted_context(text, doc_id, value, rank, meta or {})


def document_list(record: SpanRecord, where: str, value: Any) -> list[Context] | None:
    """Documents from a decoded list of objects (`content`/`text`/`page_content`, `id`, ...).

    None when `value` is not a list; objects without text are left out (logged).
    """
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        logger.debug("span %s: %s is not a list of documents", record.span_id, where)
        return None
    documents: list[Context] = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            logger.debug("span %s: %s[%d] is no object", record.span_id, where, index)
            continue
        text = next((item[k] for k in _TEXT_KEYS if isinstance(item.get(k), str)), None)
        fields = {
            "content": text,
            "id": item.get("id"),
            "score": item.get("score"),
            "metadata": item.get("metadata"),
        }
        built = document(record, f"{where}[{index}]", fields, len(documents))
        if built is not None:
            documents.append(built)
    return documents


def metadata(value: Any) -> dict[str, Any] | None:
    """A dict from a JSON object string or a mapping, else None."""
    if isinstance(value, str):
        value = decode(value, semconv.MIME_JSON)
    if isinstance(value, Mapping):
        return {str(key): item for key, item in value.items()}
    return None
