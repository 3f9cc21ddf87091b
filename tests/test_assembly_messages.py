"""Message shapes of agents and graphs (docs/assembly.md, "Query" and "Answer"): LangChain's
serialised messages, LlamaIndex blocks, tool results and tool-calling steps, ReAct steps, object
reprs, and the documents carried by tool results and graph state."""

from __future__ import annotations

from typing import Any

import pytest

from groundwire import Context
from groundwire.assembly import answer_text, query_text
from groundwire.assembly._carried import state_documents, tool_documents
from groundwire.assembly._extract import user_message_text
from groundwire.assembly._reader import SpanReader
from tests.assembly_records import oi, record

HUMAN = {"type": "human", "data": {"content": "the question", "type": "human"}}
TOOL_CALL = {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "search"}]}}
TOOL = {"type": "tool", "data": {"content": "retrieved text", "tool_call_id": "c1"}}
FINAL = {"type": "ai", "data": {"content": "the answer", "tool_calls": []}}


@pytest.mark.parametrize(
    ("value", "query", "answer"),
    [
        # a LangGraph state as OpenInference serialises it
        ({"messages": [HUMAN, TOOL_CALL, TOOL, FINAL]}, "the question", "the answer"),
        # the answer is never a tool's result, nor a step that calls tools (even with text)
        ({"messages": [HUMAN, TOOL_CALL, TOOL]}, "the question", None),
        (
            [{"role": "assistant", "content": "let me search", "tool_calls": [{"id": "c"}]}],
            None,
            None,
        ),
        ([{"role": "tool", "content": "t"}], None, None),
        # GenAI parts: a tool_call part marks a tool-calling step
        (
            [{"role": "assistant", "parts": [{"type": "tool_call", "name": "s"}]}],
            None,
            None,
        ),
        # LlamaIndex ChatMessage as JSON: text blocks; the user's message is never the answer
        (
            [{"role": "user", "blocks": [{"block_type": "text", "text": "q"}]}],
            "q",
            None,
        ),
        (
            [{"role": "assistant", "blocks": [{"block_type": "text", "text": "a"}]}],
            "a",
            "a",
        ),
        # lc dumps keep working
        (
            [{"lc": 1, "id": ["x", "AIMessage"], "kwargs": {"content": "a", "tool_calls": []}}],
            "a",
            "a",
        ),
    ],
)
def test_agent_message_shapes(value: Any, query: str | None, answer: str | None) -> None:
    """Query and answer read from the message shapes agents record."""
    assert query_text(value) == query
    assert answer_text(value) == answer


def test_react_step_answers_what_follows_its_last_answer() -> None:
    """`Thought: ... Answer: X` gives X; text that merely mentions Answer: is kept whole."""
    step = "Thought: I can answer.\nAnswer: Madrid is the capital."
    assert answer_text(step) == "Madrid is the capital."
    assert answer_text("Thought: a\nAnswer: first\nAnswer: second") == "second"
    assert answer_text("The Answer: is 42") == "The Answer: is 42"
    assert answer_text("Thought: no answer yet") == "Thought: no answer yet"


def test_user_message_only_from_message_lists() -> None:
    """A model call's question is a user message; a plain-text prompt is not one."""
    assert user_message_text("Context: ... Question: q") is None
    assert user_message_text({"messages": [[{"role": "system", "content": "s"}, HUMAN]]}) == (
        "the question"
    )
    assert user_message_text([{"role": "system", "content": "s"}]) is None


@pytest.mark.parametrize(
    "text",
    [
        "AgentWorkflowStartEvent()",
        "StopEvent(result=AgentOutput(response=ChatMessage(role=...",
        "<QueryEngineTool object>",
        "<workflows.context.Context object at 0x7f00>",
        "assistant: None",
    ],
)
def test_object_reprs_are_not_text(text: str) -> None:
    """A value that is a Python object's repr is read as absent (the root is then bare)."""
    span = record(1, attributes=oi("CHAIN", **{"input.value": text, "output.value": text}))
    reader = SpanReader(None)
    assert (reader.query(span), reader.answer(span)) == (None, None)


@pytest.mark.parametrize("text", ["HYPERLINK()", "SUM(A1)", "Paris (France)", "f(x=1) is odd"])
def test_text_that_looks_like_a_call_stays_text(text: str) -> None:
    """Only CamelCase class reprs are taken for objects."""
    span = record(1, attributes=oi("CHAIN", **{"input.value": text}))
    assert SpanReader(None).query(span) == text


def test_tool_results_give_artifact_documents_else_their_text() -> None:
    """A ToolMessage with documents as artifact gives them (with ids); without, its text."""
    doc = {"page_content": "d1", "metadata": {"row": 1}, "id": "x", "type": "Document"}
    message = {"type": "tool", "data": {"content": "d1", "artifact": [doc]}}
    assert tool_documents(message) == [Context(text="d1", id="x", rank=0, metadata={"row": 1})]
    lc_doc = {"lc": 1, "id": ["x", "Document"], "kwargs": {"page_content": "d2"}}
    wrapped = {
        "output": {
            "lc": 1,
            "id": ["x", "ToolMessage"],
            "kwargs": {"content": "t", "type": "tool", "artifact": [lc_doc]},
        },
        "kwargs": {"name": "search"},
    }
    assert [c.text for c in tool_documents(wrapped) or []] == ["d2"]
    assert tool_documents("plain result") == [Context(text="plain result", rank=0)]
    assert tool_documents({"blocks": [{"block_type": "text", "text": "b"}]}) == [
        Context(text="b", rank=0)
    ]
    assert tool_documents({"type": "tool", "data": {"content": "only text"}}) == [
        Context(text="only text", rank=0)
    ]
    assert tool_documents(None) is None


def test_state_documents_are_found_anywhere_in_a_step_output() -> None:
    """Documents in a node's state update, in order; none gives None."""
    state = {"question": "q", "context": [{"page_content": "a"}, {"page_content": "b"}]}
    assert [c.text for c in state_documents(state) or []] == ["a", "b"]
    assert [c.rank for c in state_documents(state) or []] == [0, 1]
    assert state_documents({"answer": "x"}) is None
