"""Build one `RagTurn` from a turn root: query, contexts in the order the model saw, answer.

Contexts: the document lists of the root's retrievers and rerankers, replayed in start order. A
retriever appends its documents; a reranker replaces the documents it was given (all of them
when its input list was not recorded) by its output, because the reranked list is what the model
saw. A retriever nested in another retriever that recorded documents is the same retrieval.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from groundwire import semconv
from groundwire._types import AttributeValue, Context, RagTurn
from groundwire.assembly._dialects import dialect_rank
from groundwire.assembly._kinds import (
    KIND_GENERATION,
    KIND_OTHER,
    KIND_RERANKER,
    KIND_RETRIEVER,
    KIND_TOOL,
)
from groundwire.assembly._order import in_call_order
from groundwire.assembly._reader import LIVE_ORIGIN, SpanReader
from groundwire.assembly._record import SpanRecord
from groundwire.assembly._roots import TurnRoot
from groundwire.assembly._tree import TraceTree
from groundwire.assembly._trusted import trusted_turn

__all__ = ["CONTEXT_SOURCE_KEY", "build_turn", "origin_rank"]

logger = logging.getLogger("groundwire.assembly")

_FRAMEWORK_SCOPES: Final = (
    ("llama_index", "llamaindex"),
    ("llamaindex", "llamaindex"),
    ("langchain", "langchain"),
)
"""Instrumentation-scope fragments that name the framework when no span says it."""


_STEP_KINDS: Final = (KIND_RETRIEVER, KIND_TOOL, KIND_OTHER)
"""Spans read for documents (rerankers too, always: they replace what they reranked)."""

CONTEXT_SOURCE_KEY: Final = "groundwire.context.source"
"""Context metadata naming where a context read from a model call's instructions came from."""


def build_turn(
    tree: TraceTree,
    turn_root: TurnRoot,
    reader: SpanReader,
    explain: dict[str, Any] | None = None,
) -> RagTurn | None:
    """The turn rooted at `turn_root`, or None (logged at debug) when it lacks a query or an
    answer. The subtrees of other turns inside it (`turn_root.skip`) are not part of it.

    `explain`, when given, is filled with where each part was read (for `groundwire inspect`):
    `query`, `answer` as `(span_id, origin)`, `contexts` as `[(span_id, origin, count)]`,
    `missing_parent` when the root stands in for a parent span that never arrived, and `reason`
    when no turn results.
    """
    notes: dict[str, Any] = explain if explain is not None else {}
    root = turn_root.record
    if turn_root.missing:
        notes["missing_parent"] = True
    spans = list(tree.subtree(root.span_id, turn_root.skip))
    generations = sorted(
        reader.of_kind(spans, KIND_GENERATION),
        key=lambda span: span.start_time_ns,
    )
    answer = reader.answer(root)
    answer_span = root
    if answer is None:  # a stream placeholder, or a bare root: the last model call's answer
        answer, answer_span = _last_model_answer(generations, reader, root)
    if answer is None:
        logger.debug("span %s: turn root has no answer; no turn", root.span_id)
        notes["reason"] = "the turn root has no answer in its output"
        return None
    notes["answer"] = (answer_span.span_id, reader.origin(answer_span, "answer"))
    steps = in_call_order(
        _document_steps(tree, turn_root, reader), tree, root.span_id, reader, generations
    )
    found = _query(root, spans, steps, generations, reader)
    if found is None:
        logger.debug("span %s: no query in the root or its retrievers; no turn", root.span_id)
        notes["reason"] = "no query in the turn root's input, its retrievers' or model calls'"
        return None
    query, query_span, query_origin = found
    notes["query"] = (query_span.span_id, query_origin)
    contexts = _replay(steps, reader)
    if explain is not None:
        notes["contexts"] = [
            (step.span_id, reader.origin(step, "documents"), len(documents))
            for step, documents in steps
        ]
    if not contexts:
        contexts = _instruction_contexts(spans, reader, notes)
    try:
        # Texts from the extractors, ids from a checked `SpanRecord`: built unvalidated.
        return trusted_turn(
            query,
            tuple(contexts),
            answer,
            root.trace_id,
            root.span_id,
            _attributes(root, spans, generations, reader),
        )
    except ValueError:
        logger.debug("span %s: turn does not validate; no turn", root.span_id, exc_info=True)
        notes["reason"] = "the turn does not validate"
        return None


def _query(
    root: SpanRecord,
    spans: list[SpanRecord],
    steps: list[tuple[SpanRecord, list[Context]]],
    generations: list[SpanRecord],
    reader: SpanReader,
) -> tuple[str, SpanRecord, str | None] | None:
    """The user's question, the span it was read from and where (docs/assembly.md, "Query").

    The root's input; else, when the model was called before any context arrived (an agent
    deciding which tool to call), the last user message of its first call that has one; else
    the first document step's or retriever's query; else a later model call's user message.
    Plain-text model inputs are prompts (they may hold the contexts), never the question.
    """
    query = reader.query(root)
    if query is not None:
        return query, root, reader.origin(root, "query")
    first_source = min(
        (span.start_time_ns for span in spans if reader.is_context_source(span)), default=None
    )
    early = [s for s in generations if first_source is None or s.start_time_ns < first_source]
    retrievers = reader.of_kind(spans, KIND_RETRIEVER)
    for span in early:
        message = reader.user_message(span)
        if message is not None:
            return message[0], span, message[1]
    for span in [step for step, _ in steps] + retrievers:
        query = reader.query(span)
        if query is not None:
            return query, span, reader.origin(span, "query")
    for span in generations[len(early) :] if first_source is not None else ():
        message = reader.user_message(span)
        if message is not None:
            return message[0], span, message[1]
    return None


def _document_steps(
    tree: TraceTree, turn_root: TurnRoot, reader: SpanReader
) -> list[tuple[SpanRecord, list[Context]]]:
    """The spans under the root that gave the model documents, in start order.

    Retrievals and rerankings (a retriever nested in a retriever that recorded documents is the
    same retrieval), tool calls and steps whose output holds documents. A tool call or step with
    such a span below it is the same retrieval seen from outside: the span below wins (it keeps
    each document apart, with its id and score). When the steps were recorded in more than one
    dialect (two instrumentors on one app), only the highest-precedence dialect's are kept.
    """
    steps: list[tuple[SpanRecord, list[Context]]] = []
    skip = turn_root.skip
    root_id = turn_root.record.span_id
    stack = [(child, False) for child in tree.children.get(root_id, ()) if child not in skip]
    while stack:
        span_id, inside_retrieval = stack.pop()
        record = tree.spans.get(span_id)
        if record is None:
            continue
        kind = reader.kind(record)
        documents: list[Context] | None = None
        if kind == KIND_RERANKER or (kind in _STEP_KINDS and not inside_retrieval):
            documents = reader.documents(record)
        if documents is not None:
            steps.append((record, documents))
        nested = inside_retrieval or (kind == KIND_RETRIEVER and documents is not None)
        stack.extend(
            (child, nested) for child in tree.children.get(span_id, ()) if child not in skip
        )
    if len(steps) < 2:  # one retrieval, the usual turn: nothing to order or to choose from
        return steps
    steps = _innermost(tree, steps, root_id, reader)
    steps.sort(key=lambda step: (step[0].start_time_ns, step[0].end_time_ns or 0))
    ranks = {origin_rank(reader.origin(step, "documents")) for step, _ in steps}
    if len(ranks) > 1:
        best = min(ranks)
        steps = [step for step in steps if origin_rank(reader.origin(step[0], "documents")) == best]
    return steps


def _innermost(
    tree: TraceTree,
    steps: list[tuple[SpanRecord, list[Context]]],
    root_id: str,
    reader: SpanReader,
) -> list[tuple[SpanRecord, list[Context]]]:
    """Drop tool calls and plain steps that have another document step below them."""
    outer = {step.span_id for step, _ in steps if reader.kind(step) in (KIND_TOOL, KIND_OTHER)}
    if not outer:
        return steps
    covering: set[str] = set()
    for step, _ in steps:
        parent = step.parent_span_id
        for _ in range(1_000):
            if parent is None or parent == root_id:
                break
            if parent in outer:
                covering.add(parent)
            record = tree.spans.get(parent)
            parent = record.parent_span_id if record is not None else None
    return [step for step in steps if step[0].span_id not in covering]


def origin_rank(origin: str | None) -> int:
    """The precedence of the dialect an origin names; live content (our own spans) first."""
    if origin is None or origin == LIVE_ORIGIN:
        return -1
    return dialect_rank(origin.partition(":")[0])


def _instruction_contexts(
    spans: list[SpanRecord], reader: SpanReader, notes: dict[str, Any]
) -> list[Context]:
    """Contexts from the first model call after a retrieval: its system instructions' parts.

    Used only when the turn has a retrieval but no span recorded document text (the GenAI
    conventions record `{id, score}` only); each context's metadata names its source.
    """
    retrievals = reader.of_kind(spans, KIND_RETRIEVER)
    if not retrievals:
        return []
    first_end = min(span.end_time_ns or span.start_time_ns for span in retrievals)
    calls = sorted(
        (
            span
            for span in reader.of_kind(spans, KIND_GENERATION)
            if span.start_time_ns >= first_end
        ),
        key=lambda span: span.start_time_ns,
    )
    for call in calls:
        found = reader.instructions(call)
        if found is None:
            continue
        parts, origin = found
        notes["contexts"] = [(call.span_id, origin, len(parts))]
        return [
            Context(text=text, rank=rank, metadata={CONTEXT_SOURCE_KEY: origin})
            for rank, text in enumerate(parts)
        ]
    return []


def _replay(steps: list[tuple[SpanRecord, list[Context]]], reader: SpanReader) -> list[Context]:
    """The final document list: retrievals append, rerankings replace what they reranked; a
    document whose text the model was already given is not given again."""
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
    unique: dict[str, Context] = {}
    for doc in current:
        unique.setdefault(doc.text, doc)
    return [
        doc if doc.rank == rank else doc.model_copy(update={"rank": rank})
        for rank, doc in enumerate(unique.values())
    ]


def _attributes(
    root: SpanRecord, spans: list[SpanRecord], generations: list[SpanRecord], reader: SpanReader
) -> dict[str, AttributeValue]:
    """service.name, groundwire.framework and the answering model (docs/assembly.md)."""
    attributes: dict[str, AttributeValue] = {}
    service = root.resource.get(semconv.SERVICE_NAME)
    if isinstance(service, str) and service:
        attributes[semconv.SERVICE_NAME] = service
    framework = _framework(root, spans)
    if framework is not None:
        attributes[semconv.GROUNDWIRE_FRAMEWORK] = framework
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


def _last_model_answer(
    generations: list[SpanRecord], reader: SpanReader, root: SpanRecord
) -> tuple[str | None, SpanRecord]:
    """For a root that recorded only a stream placeholder, or none at all (a bare root): the
    output of the last model call that answered in text (a tool-calling step is no answer)."""
    for span in reversed(generations):
        answer = reader.answer(span)
        if answer is not None:
            return answer, span
    return None, root
