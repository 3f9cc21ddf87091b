"""Build one `RagTurn` from a turn root: query, contexts in the order the model saw, answer.

Contexts: the document lists of the root's retrievers and rerankers, replayed in start order. A
retriever appends its documents; a reranker replaces the documents it was given (all of them
when its input list was not recorded) by its output, because the reranked list is what the model
saw. A retriever nested in another retriever that recorded documents is the same retrieval.
"""

from __future__ import annotations

import logging
from typing import Final

from groundwire import semconv
from groundwire._types import AttributeValue, Context, RagTurn
from groundwire.assembly._reader import (
    KIND_GENERATION,
    KIND_RERANKER,
    KIND_RETRIEVER,
    SpanReader,
)
from groundwire.assembly._record import SpanRecord
from groundwire.assembly._tree import TraceTree

__all__ = ["build_turn"]

logger = logging.getLogger("groundwire.assembly")

_FRAMEWORK_SCOPES: Final = (
    ("llama_index", "llamaindex"),
    ("llamaindex", "llamaindex"),
    ("langchain", "langchain"),
)
"""Instrumentation-scope fragments that name the framework when no span says it."""


def build_turn(tree: TraceTree, root: SpanRecord, reader: SpanReader) -> RagTurn | None:
    """The turn rooted at `root`, or None (logged at debug) when it lacks a query or an answer."""
    spans = list(tree.subtree(root.span_id))
    answer = reader.answer(root)
    if answer is None and reader.streamed(root):
        answer = _streamed_answer(spans, reader)
    if answer is None:
        logger.debug("span %s: turn root has no answer; no turn", root.span_id)
        return None
    steps = _document_steps(tree, root, reader)
    query = reader.query(root)
    if query is None:
        query = next(
            (q for step, _ in steps if (q := reader.query(step)) is not None),
            None,
        )
    if query is None:
        query = next(
            (
                q
                for span in spans
                if reader.kind(span) == KIND_RETRIEVER and (q := reader.query(span)) is not None
            ),
            None,
        )
    if query is None:
        logger.debug("span %s: no query in the root or its retrievers; no turn", root.span_id)
        return None
    try:
        return RagTurn(
            query=query,
            contexts=_replay(steps, reader),
            answer=answer,
            trace_id=root.trace_id,
            span_id=root.span_id,
            attributes=_attributes(root, spans, reader),
        )
    except ValueError:
        logger.debug("span %s: turn does not validate; no turn", root.span_id, exc_info=True)
        return None


def _document_steps(
    tree: TraceTree, root: SpanRecord, reader: SpanReader
) -> list[tuple[SpanRecord, list[Context]]]:
    """Retrievals and rerankings under `root` that recorded documents, in start order."""
    steps: list[tuple[SpanRecord, list[Context]]] = []
    stack = [(child, False) for child in tree.children.get(root.span_id, ())]
    while stack:
        span_id, inside_retrieval = stack.pop()
        record = tree.spans.get(span_id)
        if record is None:
            continue
        kind = reader.kind(record)
        documents: list[Context] | None = None
        if kind == KIND_RETRIEVER and not inside_retrieval:
            documents = reader.documents(record, semconv.RETRIEVAL_DOCUMENTS_PREFIX)
        elif kind == KIND_RERANKER:
            documents = reader.documents(record, semconv.RERANKER_OUTPUT_DOCUMENTS_PREFIX)
        if documents is not None:
            steps.append((record, documents))
        nested = inside_retrieval or (kind == KIND_RETRIEVER and documents is not None)
        stack.extend((child, nested) for child in tree.children.get(span_id, ()))
    steps.sort(key=lambda step: (step[0].start_time_ns, step[0].end_time_ns or 0))
    return steps


def _replay(steps: list[tuple[SpanRecord, list[Context]]], reader: SpanReader) -> list[Context]:
    """The final document list: retrievals append, rerankings replace what they reranked."""
    current: list[Context] = []
    for record, documents in steps:
        if reader.kind(record) != KIND_RERANKER:
            current.extend(documents)
            continue
        inputs = reader.reranker_inputs(record)
        if inputs is not None:
            ids, texts = inputs
            current = [doc for doc in current if doc.id not in ids and doc.text not in texts]
            current.extend(documents)
        else:
            current = list(documents)
    return [
        doc if doc.rank == rank else doc.model_copy(update={"rank": rank})
        for rank, doc in enumerate(current)
    ]


def _attributes(
    root: SpanRecord, spans: list[SpanRecord], reader: SpanReader
) -> dict[str, AttributeValue]:
    """service.name, groundwire.framework and the answering model (docs/assembly.md)."""
    attributes: dict[str, AttributeValue] = {}
    service = root.resource.get(semconv.SERVICE_NAME)
    if isinstance(service, str) and service:
        attributes[semconv.SERVICE_NAME] = service
    framework = _framework(root, spans)
    if framework is not None:
        attributes[semconv.GROUNDWIRE_FRAMEWORK] = framework
    generations = sorted(
        (span for span in spans if reader.kind(span) == KIND_GENERATION),
        key=lambda span: span.start_time_ns,
    )
    for span in reversed(generations):
        model = reader.model(span)
        if model is not None:
            attributes[semconv.GEN_AI_REQUEST_MODEL] = model
            break
    for span in reversed(generations):
        provider = reader.provider(span)
        if provider is not None:
            attributes[semconv.GEN_AI_PROVIDER_NAME] = provider
            break
    return attributes


def _framework(root: SpanRecord, spans: list[SpanRecord]) -> str | None:
    """`groundwire.framework` from any span, else guessed from the root's tracer name."""
    for span in spans:
        value = span.attributes.get(semconv.GROUNDWIRE_FRAMEWORK)
        if isinstance(value, str) and value:
            return value
    scope = (root.instrumentation_scope or "").lower()
    for fragment, name in _FRAMEWORK_SCOPES:
        if fragment in scope:
            return name
    return None


def _streamed_answer(spans: list[SpanRecord], reader: SpanReader) -> str | None:
    """For a root that recorded only a stream placeholder: the last model call's output."""
    generations = sorted(
        (span for span in spans if reader.kind(span) == KIND_GENERATION),
        key=lambda span: span.start_time_ns,
    )
    for span in reversed(generations):
        answer = reader.answer(span)
        if answer is not None:
            return answer
    return None
