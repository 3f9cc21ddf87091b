"""What the integrations write on spans, shared so LangChain and LlamaIndex spans look alike.

`CaptureConfig` holds the privacy switches (hide inputs, outputs, document text; truncate long
values), read from arguments or the `GROUNDWIRE_*` variables in `groundwire.semconv`. The
attribute builders yield `(key, value)` pairs in OpenInference and GenAI-convention names; each
builder fails on its own, so one odd field loses only itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groundwire import semconv
from groundwire._env import env_flag, env_int
from groundwire._lru import BoundedLru
from groundwire._types import Context

__all__ = [
    "LIVE_CONTENT",
    "Attribute",
    "CaptureConfig",
    "LiveContent",
    "LiveContentStore",
    "SpanKey",
    "content_id",
    "document_attributes",
    "retrieval_attributes",
    "retrieval_span_name",
    "safe_json",
]

logger = logging.getLogger("groundwire.capture")

Attribute = tuple[str, str | bool | int | float]
"""One span attribute."""


@dataclass(frozen=True, slots=True)
class CaptureConfig:
    """Which text goes onto spans. Scores are computed from the live values either way."""

    hide_inputs: bool = False
    hide_outputs: bool = False
    hide_document_text: bool = False
    max_value_length: int | None = None
    """Truncate each captured text value to this many characters; None keeps it whole."""

    def __post_init__(self) -> None:
        limit = self.max_value_length
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"max_value_length must be an int or None, got {limit!r}")
        if limit is not None and limit < 1:
            raise ValueError(f"max_value_length must be at least 1, got {limit}")

    @classmethod
    def from_env(cls, **overrides: Any) -> CaptureConfig:
        """Read the `GROUNDWIRE_HIDE_*` and `GROUNDWIRE_MAX_VALUE_LENGTH` variables.

        Keyword arguments that are not None win over the environment.
        """
        values: dict[str, Any] = {
            "hide_inputs": bool(env_flag(semconv.ENV_HIDE_INPUTS)),
            "hide_outputs": bool(env_flag(semconv.ENV_HIDE_OUTPUTS)),
            "hide_document_text": bool(env_flag(semconv.ENV_HIDE_DOCUMENT_TEXT)),
            "max_value_length": env_int(semconv.ENV_MAX_VALUE_LENGTH, minimum=0) or None,
        }
        unknown = set(overrides) - set(values)
        if unknown:
            raise TypeError(f"unknown capture option(s): {sorted(unknown)}")
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)

    def text(self, value: str) -> str:
        """Apply truncation to one captured text value."""
        limit = self.max_value_length
        if limit is not None and len(value) > limit:
            return value[:limit] + "…"
        return value


def content_id(text: str) -> str:
    """A stable id for a document that has none: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def safe_json(value: Any) -> str:
    """JSON for an attribute value; objects that JSON cannot encode are written with `str`."""
    return json.dumps(value, default=str, ensure_ascii=False)


def document_attributes(
    prefix: str, documents: Sequence[Context], config: CaptureConfig
) -> Iterator[Attribute]:
    """OpenInference's flat document list: `{prefix}.{i}.document.content|id|score|metadata`."""
    for index, document in enumerate(documents):
        try:
            if not config.hide_document_text:
                yield (
                    semconv.document_attribute(prefix, index, semconv.DOCUMENT_CONTENT),
                    config.text(document.text),
                )
            doc_id = document.id if document.id is not None else content_id(document.text)
            yield semconv.document_attribute(prefix, index, semconv.DOCUMENT_ID), doc_id
            if document.score is not None:
                yield (
                    semconv.document_attribute(prefix, index, semconv.DOCUMENT_SCORE),
                    float(document.score),
                )
            if document.metadata:
                yield (
                    semconv.document_attribute(prefix, index, semconv.DOCUMENT_METADATA),
                    safe_json(document.metadata),
                )
        except Exception:
            logger.debug("skipped an attribute of document %d", index, exc_info=True)


def retrieval_attributes(
    query: str | None,
    documents: Sequence[Context],
    config: CaptureConfig,
    *,
    data_source_id: str | None = None,
) -> Iterator[Attribute]:
    """Everything a retrieval span carries: OpenInference kind and documents plus GenAI names."""
    yield semconv.OPENINFERENCE_SPAN_KIND, semconv.SPAN_KIND_RETRIEVER
    yield semconv.GEN_AI_OPERATION_NAME, semconv.GEN_AI_OPERATION_RETRIEVAL
    if data_source_id:
        yield semconv.GEN_AI_DATA_SOURCE_ID, data_source_id
    if query is not None and not config.hide_inputs:
        yield semconv.INPUT_VALUE, config.text(query)
        yield semconv.INPUT_MIME_TYPE, semconv.MIME_TEXT
        yield semconv.GEN_AI_RETRIEVAL_QUERY_TEXT, config.text(query)
    yield from document_attributes(semconv.RETRIEVAL_DOCUMENTS_PREFIX, documents, config)
    summary: list[Mapping[str, Any]] = []
    for document in documents:
        entry: dict[str, Any] = {
            "id": document.id if document.id is not None else content_id(document.text)
        }
        if document.score is not None:
            entry["score"] = document.score
        summary.append(entry)
    yield semconv.GEN_AI_RETRIEVAL_DOCUMENTS, safe_json(summary)


def retrieval_span_name(data_source_id: str | None) -> str:
    """`retrieval {gen_ai.data_source.id}`, or plain `retrieval` when the source is unnamed."""
    return f"retrieval {data_source_id}" if data_source_id else "retrieval"


@dataclass(frozen=True, slots=True)
class LiveContent:
    """The full text of one span, kept in memory when the span itself carries less."""

    input: str | None = None
    output: str | None = None
    documents: tuple[Context, ...] | None = None


SpanKey = tuple[int, int]
"""(trace_id, span_id) as the SDK's integers."""


class LiveContentStore:
    """Full values of spans whose text was hidden or truncated, for evaluation only.

    The integrations `put` here only while the store is enabled (the online runner enables it);
    the assembler `pop`s what it uses. Bounded: the oldest entries go first, so an app whose turns
    are never assembled cannot grow memory.
    """

    def __init__(self, max_spans: int = 10_000) -> None:
        if max_spans < 1:
            raise ValueError(f"max_spans must be at least 1, got {max_spans}")
        self._items: BoundedLru[SpanKey, LiveContent] = BoundedLru(max_spans)
        self.enabled = False

    def put(self, key: SpanKey, content: LiveContent) -> None:
        """Keep `content` for the span `key` (no-op while disabled)."""
        if self.enabled:
            self._items.put(key, content)

    def get(self, key: SpanKey) -> LiveContent | None:
        """The content kept for `key`, if any."""
        return self._items.get(key)

    def pop(self, key: SpanKey) -> LiveContent | None:
        """Remove and return the content kept for `key`, if any."""
        return self._items.pop(key)

    def clear(self) -> None:
        """Forget everything kept (for tests and shutdown)."""
        self._items.clear()

    def __len__(self) -> int:
        """How many spans' content is kept."""
        return len(self._items)


LIVE_CONTENT = LiveContentStore()
"""The process-wide store the integrations write and the assembler reads."""
