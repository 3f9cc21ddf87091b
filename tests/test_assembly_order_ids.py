"""The call-id readers behind parallel tool calls' order (groundwire.assembly._order): which ids
a model asked for, in its order, and which id a tool call answers. The end-to-end cases are in
tests/test_assembly_order.py."""

from __future__ import annotations

from typing import Any

from groundwire.assembly._order import _ids, _requested_ids, _same_request


def _nest(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = [value]
    return value


def test_tool_calls_ids_in_the_models_order() -> None:
    output = {
        "generations": [
            {"message": {"tool_calls": [{"id": "b"}, {"name": "no id"}, "junk", {"id": "a"}]}}
        ]
    }
    assert list(_requested_ids(output, 0)) == ["b", "a"]


def test_genai_tool_call_parts_and_the_first_list_found_wins() -> None:
    parts = [{"type": "text", "content": "x"}, {"type": "tool_call", "id": "c1"}]
    assert list(_requested_ids(parts, 0)) == ["c1"]
    assert list(_requested_ids({"type": "tool_call", "id": 3, "x": {"id": "no"}}, 0)) == []
    # a tool_calls list ends the search of its mapping (no ids from its siblings)
    both = {"tool_calls": [{"id": "t"}], "other": {"tool_calls": [{"id": "u"}]}}
    assert list(_requested_ids(both, 0)) == ["t"]
    assert list(_requested_ids({"tool_calls": "t", "more": {"tool_calls": [{"id": "v"}]}}, 0)) == [
        "v"
    ]
    assert list(_requested_ids("tool_calls", 0)) == []
    assert list(_requested_ids(b"tool_call", 0)) == []


def test_requested_ids_stop_below_six_levels() -> None:
    found = {"tool_calls": [{"id": "deep"}]}
    assert list(_requested_ids(_nest(found, 6), 0)) == ["deep"]
    assert list(_requested_ids(_nest(found, 7), 0)) == []


def test_ids_under_a_key_depth_first_everywhere() -> None:
    value = {
        "tool_call_id": "first",
        "messages": [{"tool_call_id": "second"}, {"tool_call_id": 4}, "tool_call_id"],
        "more": {"inner": {"tool_call_id": "third"}},
    }
    assert list(_ids(value, "tool_call_id")) == ["first", "second", "third"]
    assert list(_ids([b"x", "y"], "tool_call_id")) == []
    assert list(_ids(_nest({"tool_call_id": "deep"}, 6), "tool_call_id")) == ["deep"]
    assert list(_ids(_nest({"tool_call_id": "deep"}, 7), "tool_call_id")) == []


def test_same_request_compares_the_model_call_only() -> None:
    assert _same_request((1, 0), (1, 5))
    assert not _same_request((1, 0), (2, 0))
    assert not _same_request((1, 0), None)


def _wrap(value: Any, levels: int) -> Any:
    for _ in range(levels):
        value = {"wrapped": value}
    return value


def test_both_readers_count_mapping_levels_too() -> None:
    """Six levels of mappings are read, the seventh is not (as for lists)."""
    asked = {"tool_calls": [{"id": "deep"}]}
    assert list(_requested_ids(_wrap(asked, 6), 0)) == ["deep"]
    assert list(_requested_ids(_wrap(asked, 7), 0)) == []
    answered = {"tool_call_id": "deep"}
    assert list(_ids(_wrap(answered, 6), "tool_call_id")) == ["deep"]
    assert list(_ids(_wrap(answered, 7), "tool_call_id")) == []
