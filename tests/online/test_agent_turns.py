"""Online: `groundwire.configure()` with groundwire's own LangChain and LlamaIndex instrumentors
scores agent and graph runs as one turn each, in the background and inline, with the turn the
app really made (tool artifacts, graph state, the query engine inside a tool)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import groundwire
from groundwire import RagTurn, Score
from tests.agents import lc_apps
from tests.agents._record import essence, expected

from .conftest import Telemetry

pytestmark = pytest.mark.usefixtures("online_cleanup")


class Capture:
    """Keeps every turn it is given (thread-safe) and scores 1."""

    name = "capture"

    def __init__(self) -> None:
        self.turns: list[RagTurn] = []
        self._lock = threading.Lock()

    def evaluate(self, turn: RagTurn) -> Score:
        """Keep the turn."""
        with self._lock:
            self.turns.append(turn)
        return Score(name=self.name, value=1.0)


@pytest.fixture
def langchain_on(telemetry: Telemetry) -> Iterator[None]:
    """groundwire's LangChain instrumentor on the test's tracer provider."""
    from groundwire_langchain import LangChainInstrumentor

    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    yield
    instrumentor.uninstrument()


APPS: dict[str, Callable[[], lc_apps.Truth]] = {
    "create_agent, artifact tool": lambda: lc_apps.run_agent(
        lc_apps.create_agent_app, lc_apps.search_store
    ),
    "react agent, two tool calls": lambda: lc_apps.run_agent(
        lc_apps.react_agent,
        lc_apps.retriever_tool(),
        queries=("capital of France", "river of France"),
    ),
    "RAG graph, similarity_search in a node": lambda: lc_apps.run_rag_graph(),
}


@pytest.mark.usefixtures("langchain_on")
@pytest.mark.parametrize("inline", [False, True], ids=["background", "inline"])
@pytest.mark.parametrize("app", list(APPS))
def test_langchain_agent_is_scored_as_one_turn(
    telemetry: Telemetry, app: str, inline: bool
) -> None:
    """Each run: one turn to the evaluators, the app's own question, documents and answer."""
    capture = Capture()
    options: dict[str, Any] = {"inline": ["capture"]} if inline else {}
    online = groundwire.configure(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        instrument=False,
        evaluators=[capture],
        **options,
    )
    truths = [APPS[app](), APPS[app]()]
    assert online.force_flush(10)
    assert [essence(turn) for turn in capture.turns] == [expected(t) for t in truths]


def test_llamaindex_agent_is_scored_as_one_turn(telemetry: Telemetry) -> None:
    """A FunctionAgent calling its QueryEngineTool twice: one turn with both calls' nodes."""
    from groundwire_llamaindex import LlamaIndexInstrumentor
    from tests.agents import li_apps

    index = li_apps.build_index()
    capture = Capture()
    online = groundwire.configure(
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
        instrument=False,
        evaluators=[capture],
    )
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=telemetry.tracer_provider)
    try:
        truth = li_apps.run_function_agent(index, queries=("capital of Spain", "capital of France"))
    finally:
        instrumentor.uninstrument()
    assert online.force_flush(10)
    assert [essence(turn) for turn in capture.turns] == [expected(truth)]
