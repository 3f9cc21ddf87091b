"""The query and answer walks over decoded values (docs/assembly.md, "Query" and "Answer"): each
shape's rule, its order, and where the walk stops.
"""

from __future__ import annotations

from typing import Any

import pytest

from groundwire.assembly import answer_text, decode, query_text


def _nest(leaf: Any, wrap: Any, levels: int) -> Any:
    value = leaf
    for _ in range(levels):
        value = wrap(value)
    return value


@pytest.mark.parametrize(
    ("value", "mime", "expected"),
    [
        ('  {"a": 1}', None, {"a": 1}),
        ('  ["x"]', None, ["x"]),
        ('"text"', None, "text"),
        ("plain", None, "plain"),
        ("plain", "application/json", "plain"),
        ("3", "application/json", 3),
        ("3", None, "3"),
        ('{"a": 1}', "text/plain", '{"a": 1}'),
        ("{not json", None, "{not json"),
        ({"already": "decoded"}, "application/json", {"already": "decoded"}),
        (5, None, 5),
    ],
)
def test_decode_parses_json_only_when_it_should(value: Any, mime: Any, expected: Any) -> None:
    """JSON when declared or when it looks like JSON; declared text and non-strings untouched."""
    assert decode(value, mime) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # a message's own text wins over the key walk
        ({"role": "user", "parts": [{"type": "text", "content": "p"}], "text": "key"}, "p"),
        ({"role": "USER", "content": "c", "question": "key"}, "c"),
        # a message without text falls back to the keys
        ({"role": "user", "content": "  ", "question": "key"}, "key"),
        ({"role": "user", "content": "  ", "name": "n"}, None),
        ({"role": "user", "content": ["  "], "name": "n"}, None),
        # keys in order, nested keys and wrappers
        ({"prompt": "p", "query": "q"}, "q"),
        ({"question": {"query": "inner"}}, "inner"),
        ({"question": None, "query": "q"}, "q"),
        ({"question": 3, "input": "i"}, "i"),
        ({"data": {"x": 1, "y": 2}, "kwargs": {"content": "k"}}, "k"),
        ({"question": {"a": 1, "b": 2}, "data": "w"}, "w"),
        # lone entry, lone string value
        ({"anything": {"query_str": "lone"}}, "lone"),
        ({"chat": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]}, "u"),
        ({"x": "only string", "n": 3, "b": " "}, "only string"),
        ({"x": "one", "y": "two"}, None),
        # lists of messages: last user message, else the last message with text
        ([{"type": "human", "content": "q1"}, {"type": "ai", "content": "a1"}], "q1"),
        ([{"type": "HUMAN", "content": "q1"}, {"type": "human", "content": "q2"}], "q2"),
        ([{"type": "human", "parts": ["p1"]}, {"type": 3, "content": "x"}], "p1"),
        # a tool's result is never the question (it is a context)
        ([{"role": "system", "content": "s"}, {"role": "tool", "content": "t"}], "s"),
        ([{"role": "system", "content": "s"}, {"role": "tool", "content": " "}], "s"),
        ([{"role": "user", "content": "q"}, {"role": "user", "content": None}], "q"),
        ([{"role": "user", "content": None}], None),
        # a message without text has no question (its role's name is not one)
        ({"role": "user", "content": "  "}, None),
        ({"type": "human", "content": ""}, None),
        ([{"role": "system", "content": "s"}, {"role": "user", "content": " "}], None),
        (
            [
                {"lc": 1, "id": ["langchain", "HumanMessage"], "kwargs": {"content": "lc q"}},
                {"lc": 1, "id": ["langchain", "AIMessage"], "kwargs": {"content": "lc a"}},
            ],
            "lc q",
        ),
        ([{"lc": 1, "id": [], "kwargs": {"content": "x"}}, "other"], None),
        ([{"lc": 1, "id": [3], "kwargs": {"content": "x"}}, "other"], None),
        ([{"lc": None, "id": ["HumanMessage"], "kwargs": {"content": "x"}}, "y"], None),
        ([{"lc": 1, "id": "HumanMessage", "kwargs": {"content": "x"}}, "y"], None),
        ([{"type": "human", "text": "no content"}, "y"], None),
        (["only item"], "only item"),
        ([{"query": "inside"}], "inside"),
        (["a", "b"], None),
        # message content as parts
        ([{"role": "user", "content": ["a", {"type": "text", "text": "b"}]}], "ab"),
        ([{"role": "user", "content": [{"type": "image", "text": "x"}, {"content": "c"}]}], "c"),
        ([{"role": "user", "content": [{"type": "text", "text": 3}, "d"]}], "d"),
        ([{"role": "user", "content": [{"content": "c", "text": "t"}]}], "c"),
        ([{"role": "user", "content": 3, "parts": ["from parts"]}], "from parts"),
        ([{"role": "user", "kwargs": {"content": ["k1", "k2"]}}], "k1k2"),
        ([{"role": "user", "kwargs": "not a mapping"}], None),
        # other shapes
        (b"bytes", None),
        (bytearray(b"bytes"), None),
        (3.5, None),
        (None, None),
    ],
)
def test_query_walk(value: Any, expected: str | None) -> None:
    """Every step of the query walk, and the order of its rules."""
    assert query_text(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([{"role": "user", "content": "q"}, {"role": "ai", "content": "a"}], "a"),
        ([{"role": "model", "content": "a"}, {"role": "user", "content": "q"}], "a"),
        ([{"type": "AIMessageChunk", "content": "chunk"}], "chunk"),
        ([{"role": "chatmessage", "content": "cm"}, {"role": "user", "content": "q"}], "cm"),
        ({"result": "r", "generation": "g"}, "r"),
        ({"output_text": "o", "text": "t"}, "o"),
        ({"generation": "g", "message": "m"}, "g"),
        ({"response": {"output": {"answer": "deep"}}}, "deep"),
        ({"role": "assistant", "content": ""}, None),
    ],
)
def test_answer_walk(value: Any, expected: str | None) -> None:
    """The answer walk: its keys in order and the assistant roles."""
    assert answer_text(value) == expected


@pytest.mark.parametrize(
    ("wrap", "cut_at_nine"),
    [
        (lambda v: {"question": v}, True),
        (lambda v: {"question": v, "n": 1}, False),
        (lambda v: {"data": v}, True),
        (lambda v: {"data": v, "n": 1}, False),
        (lambda v: {"unknown": v}, True),
        (lambda v: [v], True),
    ],
)
def test_nesting_is_followed_to_eight_levels(wrap: Any, cut_at_nine: bool) -> None:
    """Eight levels of keys, wrappers, lone entries or one-item lists are read; nine are not.

    (With a second entry beside the key, the innermost object's lone string still answers.)
    """
    assert query_text(_nest("q", wrap, 8)) == "q"
    assert (query_text(_nest("q", wrap, 9)) is None) is cut_at_nine


@pytest.mark.parametrize(
    "value",
    [
        {"input": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]},
        {"data": [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]},
        [[{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]],
    ],
)
def test_message_lists_below_keys_wrappers_and_lists_keep_the_role_rule(value: Any) -> None:
    """A message list found under a key, a wrapper or a one-item list still prefers the user."""
    assert query_text(value) == "u"
    assert answer_text(value) == "a"
