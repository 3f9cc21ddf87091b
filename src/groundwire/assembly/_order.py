"""Parallel tool calls in the order the model asked for them.

An agent's model may ask for several tool calls at once; frameworks run them concurrently
(LangGraph's `ToolNode`, LlamaIndex's agents), so their spans start in whatever order the threads
got going (or one after the other, in any order), while the model is given their results in the
order it asked. Within each run of tool calls asked for by the same model call, the document steps
are put in the order of the call ids the model's output listed (`tool_calls[].id`, GenAI
`tool_call` parts, OpenInference `llm.output_messages.{i}.message.tool_calls.{k}.tool_call.id`),
matched to each tool span's own
call id (its `ToolMessage.tool_call_id`, or `gen_ai.tool.call.id`). Steps whose call ids are not
recorded keep their start order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from groundwire import semconv
from groundwire._types import Context
from groundwire.assembly._extract import nested_values
from groundwire.assembly._kinds import KIND_TOOL
from groundwire.assembly._reader import SpanReader
from groundwire.assembly._record import SpanRecord
from groundwire.assembly._tree import TraceTree

__all__ = ["in_call_order"]

Step = tuple[SpanRecord, list[Context]]

_OI_CALL_ID: Final = re.compile(
    r"llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.id"
)
_MAX_DEPTH: Final = 6


def in_call_order(
    steps: list[Step],
    tree: TraceTree,
    root_id: str,
    reader: SpanReader,
    generations: list[SpanRecord],
) -> list[Step]:
    """`steps` (in start order) with the tool calls each model call asked for in its order."""
    if len(steps) < 2:
        return steps
    tools = [_tool_of(step, tree, root_id, reader) for step, _ in steps]
    if sum(tool is not None for tool in tools) < 2:
        return steps
    asked: dict[str, tuple[int, int]] = {}
    for number, generation in enumerate(generations):
        for position, call_id in enumerate(_requested(generation, reader)):
            asked.setdefault(call_id, (number, position))
    if not asked:
        return steps
    ranks = [_rank(tool, asked, reader) for tool in tools]
    result: list[Step] = []
    index = 0
    while index < len(steps):
        end = index + 1
        rank = ranks[index]
        while rank is not None and end < len(steps) and _same_request(rank, ranks[end]):
            end += 1
        batch = sorted(range(index, end), key=lambda i: ranks[i] or (0, 0))
        result.extend(steps[i] for i in batch)
        index = end
    return result


def _same_request(a: tuple[int, int], b: tuple[int, int] | None) -> bool:
    """True when two tool calls were asked for by the same model call."""
    return b is not None and a[0] == b[0]


def _tool_of(
    step: SpanRecord, tree: TraceTree, root_id: str, reader: SpanReader
) -> SpanRecord | None:
    """The tool call a step belongs to (itself, or its nearest tool ancestor under the root)."""
    current: SpanRecord | None = step
    for _ in range(1_000):
        if current is None or current.span_id == root_id:
            return None
        if reader.kind(current) == KIND_TOOL:
            return current
        parent = current.parent_span_id
        current = tree.spans.get(parent) if parent is not None else None
    return None


def _rank(
    tool: SpanRecord | None, asked: Mapping[str, tuple[int, int]], reader: SpanReader
) -> tuple[int, int] | None:
    """Which model call asked for the tool's call id, and in what position (if both known)."""
    if tool is None:
        return None
    call_id = tool.attributes.get(semconv.GEN_AI_TOOL_CALL_ID)
    if not isinstance(call_id, str):
        call_id = next(
            (
                found
                for value in reader.output_values(tool)
                for found in _ids(value, "tool_call_id")
            ),
            None,
        )
    return asked.get(call_id) if isinstance(call_id, str) else None


def _requested(generation: SpanRecord, reader: SpanReader) -> Iterator[str]:
    """The tool call ids a model call asked for, in its output's order."""
    indexed = sorted(
        ((int(match.group(1)), int(match.group(2))), value)
        for key, value in generation.attributes.items()
        if (match := _OI_CALL_ID.fullmatch(key)) is not None and isinstance(value, str)
    )
    if indexed:
        yield from (value for _, value in indexed)
        return
    for value in reader.output_values(generation):
        found = list(_requested_ids(value, 0))
        if found:
            yield from found
            return


def _requested_ids(value: Any, depth: int) -> Iterator[str]:
    """Ids of `tool_calls` entries and GenAI `tool_call` parts in a decoded output, in order."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        if value.get("type") == "tool_call" and isinstance(value.get("id"), str):
            yield value["id"]
            return
        calls = value.get("tool_calls")
        if isinstance(calls, Sequence) and not isinstance(calls, str):
            for call in calls:
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    yield call["id"]
            return
    for item in nested_values(value):
        yield from _requested_ids(item, depth + 1)


def _ids(value: Any, key: str, depth: int = 0) -> Iterator[str]:
    """Every string under `key` in a decoded value, depth first."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        found = value.get(key)
        if isinstance(found, str):
            yield found
    for item in nested_values(value):
        yield from _ids(item, key, depth + 1)
