"""Read one span's RAG facts: its kind, input, output, documents and model (the attribute layer).

Each fact is asked of the dialects (`_dialects.DIALECTS`: OpenInference, GenAI conventions,
OpenLLMetry, MLflow) in precedence order; text hidden on the span (privacy switches) comes from
the `LiveContentStore` first when one is given. Where each fact was read is remembered (`origin`)
for `groundwire inspect`. A malformed field is logged at debug level and skipped, never raised.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from groundwire import semconv
from groundwire._types import Context
from groundwire.assembly._carried import DOCUMENT_MARKER, state_documents, tool_documents
from groundwire.assembly._dialects import DIALECTS, INPUT_KEYS, OUTPUT_KEYS
from groundwire.assembly._extract import answer_text, decode, query_text, user_message_text
from groundwire.assembly._kinds import (
    KIND_OTHER,
    KIND_RETRIEVER,
    KIND_TOOL,
)
from groundwire.assembly._record import SpanRecord
from groundwire.capture import LiveContent, LiveContentStore

__all__ = ["LIVE_ORIGIN", "SpanReader", "span_kind"]

logger = logging.getLogger("groundwire.assembly")

LIVE_ORIGIN: Final = "live content"
"""The origin of a fact taken from the in-memory `LiveContentStore`."""
_MODEL_KEYS: Final = (
    semconv.LLM_MODEL_NAME,
    semconv.GEN_AI_RESPONSE_MODEL,
    semconv.GEN_AI_REQUEST_MODEL,
)
_PROVIDER_KEYS: Final = (semconv.LLM_PROVIDER, semconv.GEN_AI_PROVIDER_NAME, "gen_ai.system")
_MISSING: Final = object()
_DOCUMENT_PREFIXES: Final = (semconv.RETRIEVAL_DOCUMENTS_PREFIX + ".", "gen_ai.retrieval.documents")
"""Keys of document lists a plain step may carry (groundwire's integrations write them)."""
_STREAM_PLACEHOLDER: Final = re.compile(r"<(?:async_)?generator object[^>]*>")
"""What instrumentors record for an answer that was still streaming when the span ended."""
_OPAQUE: Final = re.compile(
    r"[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)*\((?:\)|[a-z_]\w*=).*"  # a repr: StopEvent(result=...
    r"|<[\w.]+ object(?: at 0x[0-9a-fA-F]+)?>"  # <QueryEngineTool object at 0x...>
    r"|(?:assistant|user|system|tool): None",  # str() of a LlamaIndex message without text
    re.DOTALL,
)
"""Values that are a Python object's repr, not the text it holds: read as absent."""


def span_kind(record: SpanRecord) -> str:
    """The span's role in a RAG pipeline: the first dialect (in precedence order) that names it."""
    attributes = record.attributes
    for dialect in DIALECTS:
        kind = dialect.kind(attributes)
        if kind is not None:
            return kind
    return KIND_OTHER


class SpanReader:
    """Reads and caches the RAG facts of spans (by span id; an ended span never changes).

    One reader serves one assembly pass, or one pending trace of a `TurnAssembler`. Each fact's
    origin (`"<dialect>: <attribute>"` or `"live content"`) is kept beside it.
    """

    def __init__(self, live_content: LiveContentStore | None) -> None:
        """Start with empty caches; `live_content` may be None (no hidden text to recover)."""
        self._live_store = live_content
        self._live: dict[str, LiveContent | None] = {}
        self._kinds: dict[str, str] = {}
        self._queries: dict[str, tuple[str | None, str | None]] = {}
        self._answers: dict[str, tuple[str | None, str | None]] = {}
        self._documents: dict[str, tuple[list[Context] | None, str | None]] = {}

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
        for cache in (self._live, self._kinds, self._queries, self._answers, self._documents):
            cache.pop(span_id, None)

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

    def of_kind(self, records: Iterable[SpanRecord], kind: str) -> list[SpanRecord]:
        """The records whose `kind` is `kind`, in their order (one loop, the cache read inline)."""
        kinds = self._kinds
        found: list[SpanRecord] = []
        for record in records:
            known = kinds.get(record.span_id)
            if known is None:
                known = kinds[record.span_id] = span_kind(record)
            if known == kind:
                found.append(record)
        return found

    def is_context_source(self, record: SpanRecord) -> bool:
        """True for a span that gives the model contexts: a retriever, a tool call, or a plain
        step whose output holds documents (a graph node that searched a store itself)."""
        kind = self.kind(record)
        if kind in (KIND_RETRIEVER, KIND_TOOL):
            return True
        return kind == KIND_OTHER and self.documents(record) is not None

    def has_input(self, record: SpanRecord) -> bool:
        """True when the span recorded an input (on the span, in any dialect, or live)."""
        live = self.live(record)
        if live is not None and live.input is not None:
            return True
        attributes = record.attributes
        return not attributes.keys().isdisjoint(INPUT_KEYS)

    def query(self, record: SpanRecord) -> str | None:
        """The question in the span's input (docs/assembly.md, "Query"), or None."""
        found = self._queries.get(record.span_id)
        if found is None:
            found = self._queries[record.span_id] = self._read_query(record)
        return found[0]

    def user_message(self, record: SpanRecord) -> tuple[str, str] | None:
        """A model call's last user message (not plain-text prompts), with its origin."""
        text, where = _first_text(
            record, _sources(record.attributes, None, _INPUTS), user_message_text
        )
        return None if text is None or where is None else (text, where)

    def answer(self, record: SpanRecord) -> str | None:
        """The answer in the span's output (docs/assembly.md, "Answer"), or None."""
        found = self._answers.get(record.span_id)
        if found is None:
            found = self._answers[record.span_id] = self._read_answer(record)
        return found[0]

    def origin(self, record: SpanRecord, fact: str) -> str | None:
        """Where `fact` (`query`, `answer` or `documents`) of this span was read, once read."""
        found: tuple[object, str | None] | None
        if fact == "query":
            found = self._queries.get(record.span_id)
        elif fact == "answer":
            found = self._answers.get(record.span_id)
        else:
            found = self._documents.get(record.span_id)
        return None if found is None else found[1]

    def streamed(self, record: SpanRecord) -> bool:
        """True when the span's output is only a stream placeholder (`<generator object>`)."""
        if self.answer(record) is not None:
            return False
        live = self.live(record)
        value = live.output if live is not None and live.output is not None else None
        if value is None:  # the raw attribute (JSON-wrapped or not) holds the placeholder
            attributes = record.attributes
            value = next((attributes[key] for key in OUTPUT_KEYS if key in attributes), None)
        return isinstance(value, str) and _STREAM_PLACEHOLDER.search(value) is not None

    def _read_query(self, record: SpanRecord) -> tuple[str | None, str | None]:
        """Live input, then each dialect's inputs in precedence order."""
        live = self.live(record)
        sources = _sources(record.attributes, None if live is None else live.input, _INPUTS)
        return _first_text(record, sources, query_text)

    def _read_answer(self, record: SpanRecord) -> tuple[str | None, str | None]:
        """Live output, then each dialect's outputs in precedence order."""
        live = self.live(record)
        sources = _sources(record.attributes, None if live is None else live.output, _OUTPUTS)
        return _first_text(record, sources, answer_text)

    def output_values(self, record: SpanRecord) -> list[Any]:
        """The span's outputs in every dialect, decoded (live content first); not cached."""
        live = self.live(record)
        sources = _sources(record.attributes, None if live is None else live.output, _OUTPUTS)
        return [decode(raw, mime) for _, raw, mime in sources]

    def documents(self, record: SpanRecord) -> list[Context] | None:
        """A retriever's (or reranker's output) documents in rank order; None if it recorded none.

        Live content wins (it holds the full text); then the first dialect that recorded a
        document list. Documents without text are left out (they cannot be scored).
        """
        found = self._documents.get(record.span_id)
        if found is None:
            found = self._documents[record.span_id] = self._read_documents(record)
        return found[0]

    def _read_documents(self, record: SpanRecord) -> tuple[list[Context] | None, str | None]:
        """`documents`, uncached, with its origin."""
        live = self.live(record)
        if live is not None and live.documents is not None:
            documents = [_with_rank(doc, rank) for rank, doc in enumerate(live.documents)]
            return documents, LIVE_ORIGIN
        kind = self.kind(record)
        if kind == KIND_OTHER and not _mentions_documents(record.attributes, live):
            return None, None  # one scan keeps the cost off the spans of ordinary steps
        for dialect in DIALECTS:
            found = dialect.documents(record, kind)
            if found is not None:
                return found[1], f"{dialect.name}: {found[0]}"
        if kind in (KIND_TOOL, KIND_OTHER):
            return self._carried_documents(record, kind, live)
        return None, None

    def _carried_documents(
        self, record: SpanRecord, kind: str, live: LiveContent | None
    ) -> tuple[list[Context] | None, str | None]:
        """A tool's result, or the documents in a step's output (graph state), with origin.

        A plain step is read only when its raw output mentions a document (`page_content`), so
        the cost stays off the spans of ordinary chains.
        """
        sources = _sources(record.attributes, None if live is None else live.output, _OUTPUTS)
        for where, raw, mime in sources:
            if raw is None:
                continue
            if kind == KIND_OTHER and isinstance(raw, str) and DOCUMENT_MARKER not in raw:
                continue
            value = decode(raw, mime)
            found = tool_documents(value) if kind == KIND_TOOL else state_documents(value)
            if found:
                return found, where
        return None, None

    def instructions(self, record: SpanRecord) -> tuple[list[str], str] | None:
        """A model call's system instructions as text parts, with their origin, or None."""
        for dialect in DIALECTS:
            found = dialect.instructions(record.attributes)
            if found is not None:
                return found[1], f"{dialect.name}: {found[0]}"
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


def _mentions_documents(attributes: Mapping[str, Any], live: LiveContent | None) -> bool:
    """True when a plain step may hold documents: a flattened document list among its keys, or
    an output (or live output) naming a document field. Inputs are not looked at: documents
    passed down a chain are not what the step returned. Cheap, so the document readers stay off
    the spans of ordinary steps."""
    if live is not None and isinstance(live.output, str) and DOCUMENT_MARKER in live.output:
        return True
    for key in OUTPUT_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and DOCUMENT_MARKER in value:
            return True
        if isinstance(value, Mapping | list | tuple):  # structured: walked as it is
            return True
    return any(key.startswith(_DOCUMENT_PREFIXES) for key in attributes)


_INPUTS: Final = "inputs"
_OUTPUTS: Final = "outputs"
_MIME_KEYS: Final = {_INPUTS: semconv.INPUT_MIME_TYPE, _OUTPUTS: semconv.OUTPUT_MIME_TYPE}


def _sources(attributes: Mapping[str, Any], live: Any, side: str) -> Iterator[tuple[str, Any, Any]]:
    """A span's `side` (`inputs` or `outputs`) as `(origin, raw value, mime type)`: the live
    content first when there is some, then each dialect's in precedence order.

    Lazy: a reader that stops at the first source giving text never asks the later dialects
    (each of which may scan every attribute of the span).
    """
    if live is not None:
        yield LIVE_ORIGIN, live, attributes.get(_MIME_KEYS[side])
    for dialect in DIALECTS:
        found = dialect.inputs(attributes) if side == _INPUTS else dialect.outputs(attributes)
        for attribute, value, mime in found:
            yield f"{dialect.name}: {attribute}", value, mime


def _first_text(
    record: SpanRecord, sources: Iterable[tuple[str, Any, Any]], extract: Any
) -> tuple[str | None, str | None]:
    """The first source (in order) whose decoded value yields text, and its origin."""
    for where, raw, mime in sources:
        if raw is None:
            continue
        if isinstance(raw, bool | int | float):
            logger.debug("span %s: %s is a %s, not text; skipped", record.span_id, where, type(raw))
            continue
        text: str | None = extract(decode(raw, mime))
        if text is None:
            logger.debug("span %s: no text found in %s", record.span_id, where)
            continue
        stripped = text.strip()
        if _STREAM_PLACEHOLDER.fullmatch(stripped):
            logger.debug("span %s: %s is a stream placeholder", record.span_id, where)
            continue
        if _OPAQUE.fullmatch(stripped):
            logger.debug("span %s: %s is an object's repr, not text", record.span_id, where)
            continue
        return text, where
    return None, None


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
