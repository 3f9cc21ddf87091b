"""Record an app under one instrumentor and compare its turns with what the app got back."""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from groundwire import RagTurn
from groundwire.assembly import turns_from_spans
from tests.agents.lc_apps import Truth
from tests.dialects._apps import record


def langchain_instrumentor(name: str) -> Any:
    """OpenInference's, OpenLLMetry's or groundwire's own LangChain instrumentor."""
    if name == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        return LangChainInstrumentor()
    if name == "openllmetry":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        return LangchainInstrumentor()
    from groundwire_langchain import LangChainInstrumentor as Ours

    return Ours()


def llamaindex_instrumentor(name: str) -> Any:
    """OpenInference's, OpenLLMetry's or groundwire's own LlamaIndex instrumentor."""
    if name == "openinference":
        from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

        return LlamaIndexInstrumentor()
    if name == "openllmetry":
        from opentelemetry.instrumentation import llamaindex

        return llamaindex.LlamaIndexInstrumentor()
    from groundwire_llamaindex import LlamaIndexInstrumentor as Ours

    return Ours()


INSTRUMENTORS = ("openinference", "openllmetry", "groundwire")


def run_recorded(instrumentor: Any, app: Callable[[], Any]) -> tuple[list[ReadableSpan], list[Any]]:
    """Run `app` under `instrumentor`; its finished spans and what it returned (in a list).

    The app runs in a copy of the current context: OpenLLMetry 0.62.4 leaves spans it never
    ended (streamed LlamaIndex runs) or ended late (LangGraph) attached as the current span,
    and every later trace in the process would become their child.
    """
    results: list[Any] = []

    def run() -> None:
        results.append(contextvars.copy_context().run(app))

    spans = record([instrumentor], run)
    return spans, results


def expected(truth: Truth) -> tuple[str, list[str], str]:
    """The turn the app made: its question, each document it gave the model once, its answer."""
    return truth.query, list(dict.fromkeys(truth.contexts)), truth.answer


def essence(turn: RagTurn) -> tuple[str, list[str], str]:
    """What a turn must get right: query, contexts in order, answer."""
    return turn.query, turn.context_texts, turn.answer


def one_turn(spans: list[ReadableSpan]) -> RagTurn:
    """The only turn in `spans` (fails, listing them, when there are more or none)."""
    turns = turns_from_spans(spans)
    assert len(turns) == 1, [essence(turn) for turn in turns]
    return turns[0]


_INPUTS = ("input.value", "traceloop.entity.input", "gen_ai.input.messages", "mlflow.spanInputs")


def outermost_span_ids(spans: list[ReadableSpan]) -> set[str]:
    """Span ids of the outermost runs that received the user's message: spans without a
    parent, or whose ancestors recorded no input (OpenLLMetry's `invoke_agent` wrapper)."""
    by_id = {span.context.span_id: span for span in spans if span.context is not None}
    found = set()
    for span in by_id.values():
        parent = span.parent.span_id if span.parent is not None else None
        while parent is not None and parent in by_id:
            if any(key in (by_id[parent].attributes or {}) for key in _INPUTS):
                break
            grand = by_id[parent].parent
            parent = grand.span_id if grand is not None else None
        else:
            assert span.context is not None
            found.add(format(span.context.span_id, "016x"))
    return found
