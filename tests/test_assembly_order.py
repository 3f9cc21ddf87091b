"""Parallel tool calls give their documents in the order the model asked for them, not in the
order their threads happened to start (docs/assembly.md, "Contexts")."""

from __future__ import annotations

import json

import pytest

from groundwire.assembly import turns_from_spans
from tests.agents import lc_apps
from tests.agents._record import expected, langchain_instrumentor, one_turn, run_recorded
from tests.assembly_records import OP, oi, record


def _trace(asked: list[str], tool_ids: list[str], overlap: bool = True) -> list[object]:
    """agent > model (asks `asked`), tools with `tool_ids` (started in that order), model."""
    calls = [{"id": call, "name": "search", "args": {}} for call in asked]
    first = {"messages": [{"role": "assistant", "content": "", "tool_calls": calls}]}
    spans = [
        record(
            1, start=0, end=100, attributes=oi("CHAIN", **{"input.value": "q", "output.value": "a"})
        ),
        record(2, 1, start=1, end=2, attributes=oi("LLM", **{"output.value": json.dumps(first)})),
    ]
    for n, call in enumerate(tool_ids):
        start = 10 + n
        end = start + (20 if overlap else 1)
        if not overlap:
            start, end = 10 + 5 * n, 11 + 5 * n
        message = {"type": "tool", "data": {"content": f"doc {call}", "tool_call_id": call}}
        spans.append(
            record(
                3 + n,
                1,
                start=start,
                end=end,
                attributes=oi("TOOL", **{"output.value": json.dumps(message)}),
            )
        )
    spans.append(record(9, 1, start=50, end=60, attributes=oi("LLM", **{"output.value": "a"})))
    return spans


def test_overlapping_tool_calls_follow_the_models_order() -> None:
    """The model asked c2 then c1; c1's thread started first: c2's document comes first."""
    (turn,) = turns_from_spans(_trace(["c2", "c1"], ["c1", "c2"]))
    assert turn.context_texts == ["doc c2", "doc c1"]


def test_calls_of_one_request_run_one_after_the_other_still_follow_the_models_order() -> None:
    """The thread for c1 ran (and ended) before c2's: the model still got c2's result first."""
    (turn,) = turns_from_spans(_trace(["c2", "c1"], ["c1", "c2"], overlap=False))
    assert turn.context_texts == ["doc c2", "doc c1"]


def test_calls_asked_for_by_different_model_calls_keep_their_time_order() -> None:
    """A second round of the agent (another model call asked for it) comes after the first."""
    spans = _trace(["c2"], ["c1", "c2"], overlap=False)
    later = {"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]}]}
    spans.append(
        record(8, 1, start=12, end=13, attributes=oi("LLM", **{"output.value": json.dumps(later)}))
    )
    (turn,) = turns_from_spans(spans)
    assert turn.context_texts == ["doc c1", "doc c2"]


def test_genai_call_ids_and_tool_call_parts() -> None:
    """GenAI: the ids in `tool_call` parts, matched to `gen_ai.tool.call.id`."""
    parts = [{"type": "tool_call", "id": call, "name": "s"} for call in ("b", "a")]
    output = [{"role": "assistant", "parts": parts}]
    spans = [
        record(1, start=0, end=100, attributes={"input.value": "q", "output.value": "ans"}),
        record(
            2,
            1,
            start=1,
            end=2,
            attributes={OP: "chat", "gen_ai.output.messages": json.dumps(output)},
        ),
        record(
            3,
            1,
            start=10,
            end=30,
            attributes={
                OP: "execute_tool",
                "gen_ai.tool.call.id": "a",
                "gen_ai.tool.call.result": "A",
            },
        ),
        record(
            4,
            1,
            start=11,
            end=31,
            attributes={
                OP: "execute_tool",
                "gen_ai.tool.call.id": "b",
                "gen_ai.tool.call.result": "B",
            },
        ),
        record(
            5,
            1,
            start=40,
            end=50,
            attributes={
                OP: "chat",
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "ans"}]}]
                ),
            },
        ),
    ]
    (turn,) = turns_from_spans(spans)
    assert turn.context_texts == ["B", "A"]


@pytest.mark.parametrize("instrumentor", ["openinference", "groundwire"])
def test_a_real_agents_parallel_tool_calls_are_in_call_order(instrumentor: str) -> None:
    """LangGraph runs two tool calls in threads; over ten runs the contexts always follow the
    calls' order (what the model was given), whichever thread started first."""
    for _ in range(10):
        spans, (truth,) = run_recorded(
            langchain_instrumentor(instrumentor),
            lambda: lc_apps.run_agent(
                lc_apps.react_agent,
                lc_apps.retriever_tool(),
                queries=("river of France", "capital of Germany"),
            ),
        )
        assert one_turn(spans).context_texts == expected(truth)[1]
