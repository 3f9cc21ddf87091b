"""LlamaIndex agents (`FunctionAgent`, `ReActAgent` with a `QueryEngineTool`), recorded for real by
OpenInference, OpenLLMetry and groundwire's own instrumentor: one turn per run with the user's
question, the source nodes of every tool call and the agent's final response; the tool's inner
query engine is part of the turn, never a turn of its own."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from llama_index.core import VectorStoreIndex

from tests.agents import li_apps as apps
from tests.agents._record import (
    INSTRUMENTORS,
    essence,
    expected,
    llamaindex_instrumentor,
    one_turn,
    outermost_span_ids,
    run_recorded,
)
from tests.agents.lc_apps import Truth

APPS: dict[str, Callable[[VectorStoreIndex], Truth]] = {
    "FunctionAgent, one tool call": lambda index: apps.run_function_agent(index),
    "FunctionAgent, two tool calls": lambda index: apps.run_function_agent(
        index, queries=("capital of Spain", "capital of France")
    ),
    "ReActAgent": lambda index: apps.run_react_agent(index),
}


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    """The app's index, built once, outside any recording."""
    return apps.build_index()


@pytest.mark.parametrize("instrumentor", INSTRUMENTORS)
@pytest.mark.parametrize("app", list(APPS))
def test_agent_turn_is_what_the_app_got(
    app: str, instrumentor: str, index: VectorStoreIndex
) -> None:
    """One turn: the user's message, every tool call's source nodes, the final response."""
    spans, (truth,) = run_recorded(llamaindex_instrumentor(instrumentor), lambda: APPS[app](index))
    turn = one_turn(spans)
    assert essence(turn) == expected(truth)
    assert turn.contexts
    assert turn.span_id in outermost_span_ids(spans)
    assert turn.attributes.get("groundwire.framework") == "llamaindex"
