"""Read one span's RAG facts: its kind, input, output, documents and model (the attribute layer).

OpenInference attributes are read first, GenAI semantic-convention ones second; text hidden on
the span (privacy switches) comes from the `LiveContentStore` when one is given. A malformed field
is logged at debug level and skipped, never raised.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from groundwire import semconv
from groundwire._types import Context
from groundwire.assembly._extract import answer_text, decode, query_text
from groundwire.assembly._record import SpanRecord
from groundwire.capture import LiveContent, LiveContentStore

__all__ = [
    "KIND_EMBEDDING",
    "KIND_GENERATION",
    "KIND_OTHER",
    "KIND_RERANKER",
    "KIND_RETRIEVER",
    "SpanReader",
    "span_kind",
]

logger = logging.getLogger("groundwire.assembly")

KIND_RETRIEVER: Final = "retriever"
KIND_RERANKER: Final = "reranker"
KIND_GENERATION: Final = "generation"
KIND_EMBEDDING: Final = "embedding"
KIND_OTHER: Final = "other"

_OPENINFERENCE_KINDS: Final = {
    semconv.SPAN_KIND_RETRIEVER: KIND_RETRIEVER,
    semconv.SPAN_KIND_RERANKER: KIND_RERANKER,
    semconv.SPAN_KIND_LLM: KIND_GENERATION,
    semconv.SPAN_KIND_EMBEDDING: KIND_EMBEDDING,
}
_GEN_AI_KINDS: Final = {
    semconv.GEN_AI_OPERATION_RETRIEVAL: KIND_RETRIEVER,
    semconv.GEN_AI_OPERATION_CHAT: KIND_GENERATION,
    "text_completion": KIND_GENERATION,
    "generate_content": KIND_GENERATION,
    semconv.GEN_AI_OPERATION_EMBEDDINGS: KIND_EMBEDDING,
}
_MODEL_KEYS: Final = (
    semconv.LLM_MODEL_NAME,
    semconv.GEN_AI_RESPONSE_MODEL,
    semconv.GEN_AI_REQUEST_MODEL,
)
_PROVIDER_KEYS: Final = (semconv.LLM_PROVIDER, semconv.GEN_AI_PROVIDER_NAME, "gen_ai.system")
_GEN_AI_TEXT_KEYS: Final = ("content", "text", "page_content", "document")
_MISSING: Final = object()
_STREAM_PLACEHOLDER: Final = re.compile(r"<(?:async_)?generator object[^>]*>")
"""What instrumentors record for an answer that was still streaming when the span ended."""


def span_kind(record: SpanRecord) -> str:
    """The span's role in a RAG pipeline: OpenInference kind first, GenAI operation second."""
    attributes = record.attributes
    kind = attributes.get(semconv.OPENINFERENCE_SPAN_KIND)
    if isinstance(kind, str):
        return _OPENINFERENCE_KINDS.get(kind.upper(), KIND_OTHER)
    operation = attributes.get(semconv.GEN_AI_OPERATION_NAME)
    if isinstance(operation, str):
        return _GEN_AI_KINDS.get(operation, KIND_OTHER)
    return KIND_OTHER


class SpanReader:
    """Reads and caches the RAG facts of spans (by span id; an ended span never changes).

    One reader serves one assembly pass, or one pending trace of a `TurnAssembler`.
    """

    def __init__(self, live_content: LiveContentStore | None) -> None:
        """Start with empty caches; `live_content` may be None (no hidden text to recover)."""
        self._live_store = live_content
        self._live: dict[str, LiveContent | None] = {}
        self._kinds: dict[str, str] = {}
        self._queries: dict[str, str | None] = {}
        self._answers: dict[str, str | None] = {}
        self._documents: dict[tuple[str, str], list[Context] | None] = {}

    def live(self, record: SpanRecord) -> LiveContent | None:
        """The full text kept in memory for this span, if any."""
        store = self._live_store
        if store is None:
            return None
        cached = self._live.get(record.span_id, _MISSING)
        if cached is _MISSING:
            cached = store.get(record.key)
            self._live[record.span_id] = cached
        return cached  # type: ignore[return-value]

    def forget(self, span_id: str) -> None:
        """Drop what was cached about one span (read while still open, so it may change)."""
        for cache in (self._live, self._kinds, self._queries, self._answers):
            cache.pop(span_id, None)
        for prefix in (
            semconv.RETRIEVAL_DOCUMENTS_PREFIX,
            semconv.RERANKER_OUTPUT_DOCUMENTS_PREFIX,
        ):
            self._documents.pop((span_id, prefix), None)

    def release(self, records: Iterator[SpanRecord]) -> None:
        """Drop the live content of these spans from the store (their trace is done)."""
        store = self._live_store
        if store is None or not len(store):
            return
        for record in records:
            store.pop(record.key)

    def kind(self, record: SpanRecord) -> str:
        """`span_kind`, cached."""
        kind = self._kinds.get(record.span_id)
        if kind is None:
            kind = self._kinds[record.span_id] = span_kind(record)
        return kind

    def has_input(self, record: SpanRecord) -> bool:
        """True when the span recorded an input (on the span or in live content)."""
        live = self.live(record)
        if live is not None and live.input is not None:
            return True
        attributes = record.attributes
        return semconv.INPUT_VALUE in attributes or semconv.GEN_AI_INPUT_MESSAGES in attributes

    def query(self, record: SpanRecord) -> str | None:
        """The question in the span's input (docs/assembly.md, "Query"), or None."""
        if record.span_id not in self._queries:
            self._queries[record.span_id] = self._read_query(record)
        return self._queries[record.span_id]

    def answer(self, record: SpanRecord) -> str | None:
        """The answer in the span's output (docs/assembly.md, "Answer"), or None."""
        if record.span_id not in self._answers:
            self._answers[record.span_id] = self._read_answer(record)
        return self._answers[record.span_id]

    def streamed(self, record: SpanRecord) -> bool:
        """True when the span's output is only a stream placeholder (`<generator object>`)."""
        if self.answer(record) is not None:
            return False
        live = self.live(record)
        value = live.output if live is not None and live.output is not None else None
        if value is None:
            value = record.attributes.get(semconv.OUTPUT_VALUE)
        return isinstance(value, str) and _STREAM_PLACEHOLDER.search(value) is not None

    def _read_query(self, record: SpanRecord) -> str | None:
        """Live input, `input.value`, GenAI input messages, then the retrieval/reranker query."""
        attributes = record.attributes
        live = self.live(record)
        mime = attributes.get(semconv.INPUT_MIME_TYPE)
        sources: list[tuple[str, Any, Any]] = []
        if live is not None and live.input is not None:
            sources.append(("live input", live.input, mime))
        sources.append((semconv.INPUT_VALUE, attributes.get(semconv.INPUT_VALUE), mime))
        sources.append(
            (semconv.GEN_AI_INPUT_MESSAGES, attributes.get(semconv.GEN_AI_INPUT_MESSAGES), None)
        )
        sources.append(
            (
                semconv.GEN_AI_RETRIEVAL_QUERY_TEXT,
                attributes.get(semconv.GEN_AI_RETRIEVAL_QUERY_TEXT),
                semconv.MIME_TEXT,
            )
        )
        sources.append((semconv.RERANKER_QUERY, attributes.get(semconv.RERANKER_QUERY), None))
        return _first_text(record, sources, query_text)

    def _read_answer(self, record: SpanRecord) -> str | None:
        """Live output, `output.value`, then GenAI output messages."""
        attributes = record.attributes
        live = self.live(record)
        mime = attributes.get(semconv.OUTPUT_MIME_TYPE)
        sources: list[tuple[str, Any, Any]] = []
        if live is not None and live.output is not None:
            sources.append(("live output", live.output, mime))
        sources.append((semconv.OUTPUT_VALUE, attributes.get(semconv.OUTPUT_VALUE), mime))
        sources.append(
            (semconv.GEN_AI_OUTPUT_MESSAGES, attributes.get(semconv.GEN_AI_OUTPUT_MESSAGES), None)
        )
        return _first_text(record, sources, answer_text)

    def documents(self, record: SpanRecord, prefix: str) -> list[Context] | None:
        """The span's document list under `prefix` in rank order; None when it recorded none.

        Live content wins (it holds the full text); then OpenInference's flattened
        `{prefix}.{i}.document.*`; then, for retrievals, GenAI's `gen_ai.retrieval.documents`.
        Documents without text are left out (they cannot be scored).
        """
        key = (record.span_id, prefix)
        if key not in self._documents:
            self._documents[key] = self._read_documents(record, prefix)
        return self._documents[key]

    def _read_documents(self, record: SpanRecord, prefix: str) -> list[Context] | None:
        """`documents`, uncached."""
        live = self.live(record)
        if live is not None and live.documents is not None:
            return [_with_rank(doc, rank) for rank, doc in enumerate(live.documents)]
        flat = _flattened_documents(record, prefix)
        if flat is not None:
            return flat
        if prefix == semconv.RETRIEVAL_DOCUMENTS_PREFIX:
            return _gen_ai_documents(record)
        return None

    def reranker_inputs(self, record: SpanRecord) -> tuple[set[str], set[str]] | None:
        """Ids and texts of the documents a reranker was given; None when it recorded none.

        Ids are read even when the text was hidden, so a reranking can still be matched.
        """
        start = semconv.RERANKER_INPUT_DOCUMENTS_PREFIX + "."
        ids: set[str] = set()
        texts: set[str] = set()
        found = False
        for key, value in record.attributes.items():
            if not key.startswith(start):
                continue
            found = True
            if key.endswith("." + semconv.DOCUMENT_ID) and isinstance(value, str | int):
                ids.add(str(value))
            elif key.endswith("." + semconv.DOCUMENT_CONTENT) and isinstance(value, str):
                texts.add(value)
        return (ids, texts) if found else None

    def model(self, record: SpanRecord) -> str | None:
        """The model name an LLM span recorded, if any."""
        return _first_string(record, _MODEL_KEYS)

    def provider(self, record: SpanRecord) -> str | None:
        """The model provider an LLM span recorded, if any."""
        return _first_string(record, _PROVIDER_KEYS)


def _first_text(
    record: SpanRecord, sources: list[tuple[str, Any, Any]], extract: Any
) -> str | None:
    """The first source (in order) whose decoded value yields text; bad types are skipped."""
    for where, raw, mime in sources:
        if raw is None:
            continue
        if isinstance(raw, bool | int | float):
            logger.debug("span %s: %s is a %s, not text; skipped", record.span_id, where, type(raw))
            continue
        text: str | None = extract(decode(raw, mime))
        if text is not None and _STREAM_PLACEHOLDER.fullmatch(text.strip()):
            logger.debug("span %s: %s is a stream placeholder", record.span_id, where)
            continue
        if text is not None:
            return text
        logger.debug("span %s: no text found in %s", record.span_id, where)
    return None


def _first_string(record: SpanRecord, keys: Sequence[str]) -> str | None:
    """The first non-empty string attribute among `keys`."""
    for key in keys:
        value = record.attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _with_rank(document: Context, rank: int) -> Context:
    """`document` with its rank set (copied only when it changes)."""
    return document if document.rank == rank else document.model_copy(update={"rank": rank})


def _flattened_documents(record: SpanRecord, prefix: str) -> list[Context] | None:
    """OpenInference's `{prefix}.{i}.document.{field}` attributes, regrouped by `i`."""
    start = prefix + "."
    fields: dict[int, dict[str, Any]] = {}
    for key, value in record.attributes.items():
        if not key.startswith(start):
            continue
        index_text, _, name = key[len(start) :].partition(".")
        if not index_text.isdigit() or not name.startswith("document."):
            logger.debug("span %s: malformed document attribute %r skipped", record.span_id, key)
            continue
        fields.setdefault(int(index_text), {})[name[len("document.") :]] = value
    if not fields:
        return None
    documents: list[Context] = []
    for index in sorted(fields):
        document = _document(record, f"{prefix}.{index}", fields[index], len(documents))
        if document is not None:
            documents.append(document)
    return documents


def _gen_ai_documents(record: SpanRecord) -> list[Context] | None:
    """GenAI's `gen_ai.retrieval.documents`: a JSON string or structured list of objects."""
    raw = record.attributes.get(semconv.GEN_AI_RETRIEVAL_DOCUMENTS)
    if raw is None:
        return None
    value = decode(raw, semconv.MIME_JSON) if isinstance(raw, str) else raw
    if isinstance(value, str) or not isinstance(value, Sequence):
        logger.debug("span %s: gen_ai.retrieval.documents is not a list", record.span_id)
        return None
    documents: list[Context] = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            logger.debug("span %s: retrieval document %d is no object", record.span_id, index)
            continue
        text = next((item[k] for k in _GEN_AI_TEXT_KEYS if isinstance(item.get(k), str)), None)
        fields = {"content": text, "id": item.get("id"), "score": item.get("score")}
        fields["metadata"] = item.get("metadata")
        document = _document(record, f"gen_ai.retrieval.documents[{index}]", fields, len(documents))
        if document is not None:
            documents.append(document)
    return documents


def _document(
    record: SpanRecord, where: str, fields: Mapping[str, Any], rank: int
) -> Context | None:
    """One `Context` from a document's fields; each malformed field is skipped on its own."""
    text = fields.get("content")
    if not isinstance(text, str):
        logger.debug("span %s: %s has no text content; document skipped", record.span_id, where)
        return None
    doc_id = fields.get("id")
    if doc_id is not None and (isinstance(doc_id, bool) or not isinstance(doc_id, str | int)):
        logger.debug("span %s: %s.id is not a string or int; dropped", record.span_id, where)
        doc_id = None
    score = _score(fields.get("score"))
    if fields.get("score") is not None and score is None:
        logger.debug("span %s: %s.score is not a number; dropped", record.span_id, where)
    metadata = _metadata(fields.get("metadata"))
    if fields.get("metadata") is not None and metadata is None:
        logger.debug("span %s: %s.metadata is not a JSON object; dropped", record.span_id, where)
    return Context(
        text=text,
        id=str(doc_id) if doc_id is not None else None,
        score=score,
        rank=rank,
        metadata=metadata or {},
    )


def _score(value: Any) -> float | None:
    """A finite float from a number or numeric string, else None."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        score = float(value)
    except (TypeError, ValueError):
        return None
    return score if math.isfinite(score) else None


def _metadata(value: Any) -> dict[str, Any] | None:
    """A dict from a JSON object string or a mapping, else None."""
    if isinstance(value, str):
        value = decode(value, semconv.MIME_JSON)
    if isinstance(value, Mapping):
        return {str(key): item for key, item in value.items()}
    return None
