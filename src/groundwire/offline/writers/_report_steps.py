"""Agent and graph turns in the report: the steps in order, which step gave which context, and
which model call gave the answer.

A `RagTurn` keeps no spans, so the report's turns carry a slot (`steps_slot`) and
`insert_steps` fills it after the run: it reads the input trace files again, keeping only the
traces of the turns in the report (at most `worst`), asks the assembler where each part of those
turns was read (`explain_traces`, what `groundwire inspect` shows), and lists the turn's model
calls, tool calls, retrievals and document steps in start order, each with the graph node it ran
in, the contexts it gave and, for the model call whose output is the answer, "gave the answer".
A plain chain (one retrieval, one model call) gets no list: there is nothing to explain.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from groundwire.assembly import LogRecordData, SpanRecord, TurnReport, explain_traces, span_kind
from groundwire.offline.readers import Problems, ReadStats, read_spans
from groundwire.offline.writers._report_style import escape

__all__ = ["TurnStep", "insert_steps", "steps_html", "steps_slot", "turn_steps"]

_SLOT: Final = "<!-- groundwire:steps:{trace}:{span} -->"
_SLOT_PATTERN: Final = re.compile(r"<!-- groundwire:steps:([0-9a-f]*):([0-9a-f]*) -->")
_SHOWN_KINDS: Final = {"generation": "model call", "tool": "tool call", "retriever": "retrieval"}
_SHOWN_KINDS_ALL: Final = {**_SHOWN_KINDS, "reranker": "reranking", "other": "step"}


def steps_slot(trace_id: str | None, span_id: str | None) -> str:
    """The placeholder a report's turn carries until `insert_steps` fills it."""
    return _SLOT.format(trace=trace_id or "", span=span_id or "")


@dataclass(frozen=True, slots=True)
class TurnStep:
    """One step of a turn: a model call, tool call, retrieval or document step."""

    kind: str
    """model call, tool call, retrieval, reranking or step."""
    name: str
    node: str | None
    """The graph node or agent step it ran in (the root's child above it), if not itself."""
    contexts: tuple[int, int] | None = None
    """The contexts it gave, first and last index (None: none, or not known exactly)."""
    documents: int = 0
    """How many documents it gave."""
    answer: bool = False
    """Its output is the turn's answer."""


def _descendants(spans: dict[str, SpanRecord], root: str) -> list[tuple[SpanRecord, str | None]]:
    """The spans under `root` in start order, each with the root's child it sits under."""
    children: dict[str, list[SpanRecord]] = {}
    for span in spans.values():
        if span.parent_span_id:
            children.setdefault(span.parent_span_id, []).append(span)
    found: list[tuple[SpanRecord, str | None]] = []
    stack = [(child, child.name) for child in children.get(root, ())]
    while stack:
        span, node = stack.pop()
        found.append((span, node))
        stack.extend((child, node) for child in children.get(span.span_id, ()))
    return sorted(found, key=lambda item: (item[0].start_time_ns, item[0].end_time_ns or 0))


def turn_steps(
    spans: Sequence[SpanRecord], report: TurnReport, contexts: int
) -> list[TurnStep] | None:
    """The turn's steps in start order; None for a plain chain (at most one retrieval and one
    model call, and no tool call)."""
    by_id = {span.span_id: span for span in spans}
    given = {origin.span_id: origin.count or 0 for origin in report.contexts}
    exact = sum(given.values()) == contexts
    below = _descendants(by_id, report.root_id)
    kinds = {span.span_id: span_kind(span) for span, _ in below}
    models = [span for span, _ in below if kinds[span.span_id] == "generation"]
    answer_id = report.answer.span_id if report.answer else None
    if answer_id not in {span.span_id for span in models}:
        answer_id = models[-1].span_id if models else None
    tools = sum(kind == "tool" for kind in kinds.values())
    if not tools and len(models) <= 1 and len(given) <= 1:
        return None
    steps: list[TurnStep] = []
    position = 0
    for span, node in below:
        kind = kinds[span.span_id]
        documents = given.get(span.span_id)
        if kind not in _SHOWN_KINDS and documents is None:
            continue
        where = None if node == span.name else node
        shown: tuple[int, int] | None = None
        if documents:
            shown = (position, position + documents - 1) if exact else None
            position += documents
        steps.append(
            TurnStep(
                _SHOWN_KINDS_ALL.get(kind, "step"),
                span.name,
                where,
                shown,
                documents or 0,
                span.span_id == answer_id,
            )
        )
    return steps


def steps_html(steps: Sequence[TurnStep]) -> str:
    """The steps as an ordered list (what each gave, in words)."""
    items = []
    for step in steps:
        node = f' <span class="na">in {escape(step.node)}</span>' if step.node else ""
        gave = []
        if step.contexts is not None:
            first, last = step.contexts
            gave.append(f"context {first}" if first == last else f"contexts {first}–{last}")
        elif step.documents:
            gave.append(f"{step.documents} document{'s' if step.documents != 1 else ''}")
        if step.answer:
            gave.append("<strong>the answer</strong>")
        said = f" → gave {' and '.join(gave)}" if gave else ""
        items.append(
            f'<li data-kind="{escape(step.kind)}">{escape(step.kind)} '
            f"<code>{escape(step.name)}</code>{node}{said}</li>"
        )
    return f'<h4>Steps</h4><ol class="steps">{"".join(items)}</ol>'


def _reports(
    paths: Iterable[str | os.PathLike[str]], traces: set[str], fmt: str | None
) -> tuple[dict[tuple[str, str], TurnReport], dict[str, list[SpanRecord]]]:
    """The assembler's account of each wanted trace's turns, and the traces' spans."""
    problems = Problems(strict=False, stats=ReadStats(), on_report=lambda message: None)
    spans: dict[str, list[SpanRecord]] = {}
    logs: list[LogRecordData] = []
    for batch in read_spans(paths, problems, fmt=fmt):  # type: ignore[arg-type]
        for span in batch.spans:
            if span.trace_id in traces:
                spans.setdefault(span.trace_id, []).append(span)
        logs.extend(log for log in batch.logs if log.trace_id in traces)
    reports: dict[tuple[str, str], TurnReport] = {}
    for trace in explain_traces([s for found in spans.values() for s in found], logs):
        for turn in trace.turns:
            reports[(trace.trace_id, turn.root_id)] = turn
    return reports, spans


def insert_steps(
    report: str | os.PathLike[str], paths: Sequence[str | os.PathLike[str]], fmt: str | None
) -> int:
    """Fill the steps of the agent and graph turns of a written report from the trace files
    `paths` it was scored from (the file is replaced atomically); returns how many turns got
    steps. Slots left (plain chains, turns not found) are removed."""
    path = Path(report)
    text = path.read_text(encoding="utf-8")
    keys = set(_SLOT_PATTERN.findall(text))
    if not keys:
        return 0
    files = [p for p in paths if Path(p).is_file()]
    try:
        reports, spans = _reports(files, {trace for trace, _ in keys}, fmt)
    except (OSError, ValueError):  # the run itself read these files; steps are an extra
        reports, spans = {}, {}
    filled = 0

    def fill(match: re.Match[str]) -> str:
        nonlocal filled
        found = reports.get((match[1], match[2]))
        if found is None or found.turn is None:
            return ""
        steps = turn_steps(spans.get(match[1], []), found, len(found.turn.contexts))
        if not steps:
            return ""
        filled += 1
        return steps_html(steps)

    partial = path.with_name(f".{path.name}.steps")
    partial.write_text(_SLOT_PATTERN.sub(fill, text), encoding="utf-8")
    os.replace(partial, path)
    return filled
