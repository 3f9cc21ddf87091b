"""LangGraph and LangChain 1.x agents and graphs, recorded for real by OpenInference, OpenLLMetry
and groundwire's own instrumentor: every turn once, rooted at the outermost run, with the
question the user asked, every document the model was given and the final answer, as the app
itself got them back (tool messages, artifacts, graph state)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.agents import lc_apps as apps
from tests.agents._record import (
    INSTRUMENTORS,
    essence,
    expected,
    langchain_instrumentor,
    one_turn,
    outermost_span_ids,
    run_recorded,
)

APPS: dict[str, Callable[[], apps.Truth]] = {
    "react agent, retriever tool": lambda: apps.run_agent(apps.react_agent, apps.retriever_tool()),
    "create_agent, retriever tool": lambda: apps.run_agent(
        apps.create_agent_app, apps.retriever_tool()
    ),
    "create_agent, artifact tool": lambda: apps.run_agent(apps.create_agent_app, apps.search_store),
    "react agent, artifact tool": lambda: apps.run_agent(apps.react_agent, apps.search_store),
    "react agent, two tool calls": lambda: apps.run_agent(
        apps.react_agent, apps.retriever_tool(), queries=("capital of France", "river of France")
    ),
    "react agent, ainvoke": lambda: apps.run_agent(
        apps.react_agent, apps.retriever_tool(), mode="ainvoke"
    ),
    "react agent, streamed": lambda: apps.run_agent(
        apps.react_agent, apps.retriever_tool(), mode="stream"
    ),
    "RAG graph, similarity_search in a node": lambda: apps.run_rag_graph(),
    "RAG graph, retriever run in a node": lambda: apps.run_rag_graph(use_retriever=True),
}


@pytest.mark.parametrize("instrumentor", INSTRUMENTORS)
@pytest.mark.parametrize("app", list(APPS))
def test_agent_turn_is_what_the_app_got(app: str, instrumentor: str) -> None:
    """One turn with the user's question, the tool results / graph state, the final answer."""
    spans, (truth,) = run_recorded(langchain_instrumentor(instrumentor), APPS[app])
    turn = one_turn(spans)
    assert essence(turn) == expected(truth)
    assert turn.contexts, "the documents the model was given"
    assert turn.span_id in outermost_span_ids(spans)


def test_two_tool_calls_give_the_documents_of_both_in_order() -> None:
    """The two tool calls' documents follow each other in call order, each text once."""
    spans, (truth,) = run_recorded(
        langchain_instrumentor("openinference"), APPS["react agent, two tool calls"]
    )
    turn = one_turn(spans)
    assert len(truth.contexts) == 4 and len(set(truth.contexts)) == 3
    assert turn.context_texts == list(dict.fromkeys(truth.contexts))


def test_artifact_documents_keep_their_ids_and_metadata() -> None:
    """Documents from a tool's artifact are contexts of their own, with id and metadata."""
    spans, (truth,) = run_recorded(
        langchain_instrumentor("groundwire"), APPS["create_agent, artifact tool"]
    )
    turn = one_turn(spans)
    found = apps.STORE.similarity_search(truth.query.replace("What is the ", "").rstrip("?"), k=2)
    assert [c.metadata.get("row") for c in turn.contexts] == [d.metadata["row"] for d in found]
    assert [c.id for c in turn.contexts] == [d.id for d in found]


def test_conversation_turns_in_one_trace_stay_apart() -> None:
    """Two questions to one agent inside one outer span: two turns, each with its own parts."""
    from opentelemetry import trace

    def conversation() -> list[apps.Truth]:
        tracer = trace.get_tracer("app")
        with tracer.start_as_current_span("session"):
            return [
                apps.run_agent(apps.react_agent, apps.retriever_tool()),
                apps.run_agent(
                    apps.react_agent,
                    apps.retriever_tool(),
                    queries=("capital of Spain",),
                    question="And Spain?",
                    answer="Madrid.",
                ),
            ]

    from groundwire.assembly import turns_from_spans

    spans, (truths,) = run_recorded(langchain_instrumentor("openinference"), conversation)
    turns = turns_from_spans(spans)
    assert [essence(t) for t in turns] == [expected(t) for t in truths]


@pytest.mark.parametrize("instrumentor", INSTRUMENTORS)
def test_conversation_with_a_checkpointer_gives_each_message_its_own_turn(
    instrumentor: str,
) -> None:
    """Two messages on one LangGraph thread (history in a checkpointer): two turns, each with
    its own question, only its own tool results, and its own answer."""
    from groundwire.assembly import turns_from_spans

    questions = ("What is the capital of France?", "What is the capital of Spain?")
    answers = ("Paris.", "Madrid.")
    spans, (truths,) = run_recorded(
        langchain_instrumentor(instrumentor), lambda: apps.run_conversation(questions, answers)
    )
    assert [essence(t) for t in turns_from_spans(spans)] == [expected(t) for t in truths]
