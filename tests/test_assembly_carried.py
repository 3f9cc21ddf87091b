"""Documents carried by tool results and graph state, read field by field (the readers behind
agent and graph turns; docs/assembly.md, "Contexts"). The end-to-end cases are in
tests/agents and tests/test_assembly_messages.py; these pin each rule of the readers."""

from __future__ import annotations

from typing import Any

from groundwire._types import Context
from groundwire.assembly._carried import state_documents, tool_documents


def _doc(text: str, **fields: Any) -> dict[str, Any]:
    """A LangChain `Document` as its plain serialisation."""
    return {"page_content": text, **fields}


def _lc_doc(text: str, **fields: Any) -> dict[str, Any]:
    """A LangChain `Document` in lc (`kwargs`) form."""
    return {"lc": 1, "type": "constructor", "kwargs": {"page_content": text, **fields}}


def _texts(found: list[Context] | None) -> list[tuple[str, int | None]]:
    assert found is not None
    return [(c.text, c.rank) for c in found]


def test_a_tool_result_string_is_one_context_and_blank_is_none() -> None:
    assert _texts(tool_documents("the result")) == [("the result", 0)]
    assert tool_documents("  \n") is None
    assert tool_documents(None) is None


def test_tool_messages_are_known_by_type_role_or_lc_id_in_any_case() -> None:
    """`type` or `role` tool/ToolMessage (any case), in the fields, `data` or `kwargs`; the lc
    id names a ToolMessage too."""
    assert _texts(tool_documents({"type": "tool", "content": "a"})) == [("a", 0)]
    assert _texts(tool_documents({"role": "Tool", "content": "b"})) == [("b", 0)]
    assert _texts(tool_documents({"type": "ToolMessage", "content": "c"})) == [("c", 0)]
    wrapped = {"type": "tool", "data": {"content": "d", "artifact": [_doc("D")]}}
    assert _texts(tool_documents(wrapped)) == [("D", 0)]
    lc = {"id": ["langchain", "schema", "messages", "ToolMessage"], "kwargs": {"content": "e"}}
    assert _texts(tool_documents(lc)) == [("e", 0)]
    other = {"id": ["langchain", "schema", "messages", "AIMessage"], "kwargs": {"content": "f"}}
    assert tool_documents(other) is None  # not a tool message, and no text field of its own
    assert tool_documents({"id": [], "kwargs": {"content": 7}}) is None


def test_an_artifact_of_documents_wins_over_the_content() -> None:
    """A `content_and_artifact` tool: the artifact's documents, ranked, with ids and metadata."""
    message = {
        "type": "tool",
        "content": "joined text",
        "artifact": [_doc("one", id="d1", metadata={"source": "a.md"}), _lc_doc("two", id=5)],
    }
    found = tool_documents(message)
    assert found is not None
    assert [(c.text, c.rank, c.id) for c in found] == [("one", 0, "d1"), ("two", 1, "5")]
    assert found[0].metadata == {"source": "a.md"}
    assert found[1].metadata == {}
    empty_artifact = {"type": "tool", "content": "only text", "artifact": []}
    assert _texts(tool_documents(empty_artifact)) == [("only text", 0)]


def test_openllmetry_wraps_the_message_in_output_at_most_twice() -> None:
    message = {"type": "tool", "content": "inner", "artifact": [_doc("X")]}
    assert _texts(tool_documents({"output": message, "kwargs": {}})) == [("X", 0)]
    assert _texts(tool_documents({"output": {"output": message}})) == [("X", 0)]
    too_deep = {"output": {"output": {"output": {"output": message}}}}
    assert [d.text for d in tool_documents(too_deep) or []] != ["X"]


def test_text_fields_are_read_in_order_and_blocks_are_joined() -> None:
    assert _texts(tool_documents({"content": "c", "text": "t"})) == [("c", 0)]
    assert _texts(tool_documents({"text": "t", "output": "o"})) == [("t", 0)]
    assert _texts(tool_documents({"result": "r"})) == [("r", 0)]
    blocks = {"blocks": [{"block_type": "text", "text": "a"}, "junk", {"text": 3}, {"text": "b"}]}
    assert _texts(tool_documents(blocks)) == [("ab", 0)]
    assert _texts(tool_documents({"blocks": [{"text": " "}], "text": "after"})) == [("after", 0)]
    assert _texts(tool_documents({"blocks": "not blocks", "text": "t2"})) == [("t2", 0)]
    assert tool_documents({"other": "x"}) is None


def test_graph_state_documents_are_found_in_order_at_any_depth() -> None:
    state = {"question": "q", "context": [_doc("first"), {"nested": [_lc_doc("second", id=True)]}]}
    found = state_documents(state)
    assert found is not None
    assert [(c.text, c.rank, c.id) for c in found] == [("first", 0, None), ("second", 1, None)]
    assert state_documents({"context": [], "answer": "a"}) is None
    assert state_documents({"page_content": 3}) is None
    assert state_documents({"kwargs": {"page_content": None}}) is None
    assert state_documents(["text", b"bytes"]) is None


def test_a_document_is_not_searched_inside_and_depth_is_bounded() -> None:
    """A document's own fields are not searched for more documents; past 8 levels nothing is."""
    holder = _doc("outer", metadata={"inner": _doc("inner")})
    assert [c.text for c in state_documents(holder) or []] == ["outer"]
    deep: Any = _doc("deep")
    for _ in range(8):
        deep = [deep]
    assert [c.text for c in state_documents(deep) or []] == ["deep"]
    assert state_documents([deep]) is None
