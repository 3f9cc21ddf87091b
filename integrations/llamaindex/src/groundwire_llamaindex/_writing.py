"""What a record writes onto its span, under the privacy switches: input and output values,
token counts, and a retriever's or reranker's documents. A value the span shows only in part
(hidden or truncated) marks the record `altered`, so its full text goes to `LIVE_CONTENT`."""

from __future__ import annotations

from collections.abc import Iterator

from opentelemetry.util.types import AttributeValue

from groundwire import semconv
from groundwire._types import Context
from groundwire.capture import CaptureConfig, document_attributes, retrieval_attributes
from groundwire_llamaindex import _values
from groundwire_llamaindex._record import Record

__all__ = [
    "capture_input",
    "capture_output",
    "rerank_values",
    "retrieval_values",
    "token_attributes",
]


def _shown(config: CaptureConfig, record: Record, text: str, hidden: bool) -> str | None:
    """What of `text` goes on the span (None: nothing); marks the record when it differs."""
    if hidden:
        record.altered = True
        return None
    shown = config.text(text)
    if shown is not text:
        record.altered = True
    return shown


def capture_input(config: CaptureConfig, record: Record, text: str, mime: str) -> None:
    """Write `input.value` (and its MIME type) under the privacy switches."""
    record.full_input = text
    _write(record, text, _shown(config, record, text, config.hide_inputs), mime, _INPUT)


def capture_output(config: CaptureConfig, record: Record, text: str, mime: str) -> None:
    """Write `output.value` (and its MIME type) under the privacy switches."""
    record.full_output = text
    _write(record, text, _shown(config, record, text, config.hide_outputs), mime, _OUTPUT)


_INPUT = (semconv.INPUT_VALUE, semconv.INPUT_MIME_TYPE)
_OUTPUT = (semconv.OUTPUT_VALUE, semconv.OUTPUT_MIME_TYPE)


def _write(record: Record, text: str, shown: str | None, mime: str, keys: tuple[str, str]) -> None:
    """The value's attribute and its MIME type (`text/plain` once cut: no longer whole JSON)."""
    if shown is not None:
        record.attributes[keys[0]] = shown
        record.attributes[keys[1]] = mime if shown is text else semconv.MIME_TEXT


def _mark_documents(config: CaptureConfig, record: Record, documents: list[Context]) -> None:
    """Keep the documents for `LIVE_CONTENT` and note whether the span shows less."""
    record.documents = tuple(documents)
    if record.query is not None and (
        config.hide_inputs or config.text(record.query) is not record.query
    ):
        record.altered = True
        record.full_input = record.query
    if config.hide_document_text or any(
        config.text(document.text) is not document.text for document in documents
    ):
        record.altered = True


def token_attributes(response: object) -> Iterator[tuple[str, AttributeValue]]:
    """Token counts in OpenInference and GenAI names, where the response has them."""
    prompt, completion, total = _values.token_counts(response)
    if prompt is not None:
        yield semconv.LLM_TOKEN_COUNT_PROMPT, prompt
        yield semconv.GEN_AI_USAGE_INPUT_TOKENS, prompt
    if completion is not None:
        yield semconv.LLM_TOKEN_COUNT_COMPLETION, completion
        yield semconv.GEN_AI_USAGE_OUTPUT_TOKENS, completion
    if total is not None:
        yield semconv.LLM_TOKEN_COUNT_TOTAL, total


def retrieval_values(config: CaptureConfig, record: Record, nodes: object) -> None:
    """A retriever's query and the nodes it returned."""
    contexts = _values.contexts_of(nodes)
    record.attributes.update(
        retrieval_attributes(record.query, contexts, config, data_source_id=record.data_source)
    )
    _mark_documents(config, record, contexts)


def rerank_values(config: CaptureConfig, record: Record, nodes: object) -> None:
    """A reranker's query and its input and output nodes."""
    if record.query is not None and not config.hide_inputs:
        record.attributes[semconv.RERANKER_QUERY] = config.text(record.query)
    before = _values.contexts_of(record.input_nodes)
    after = _values.contexts_of(nodes)
    record.attributes.update(
        document_attributes(semconv.RERANKER_INPUT_DOCUMENTS_PREFIX, before, config)
    )
    record.attributes.update(
        document_attributes(semconv.RERANKER_OUTPUT_DOCUMENTS_PREFIX, after, config)
    )
    record.input_nodes = None
    _mark_documents(config, record, after)
