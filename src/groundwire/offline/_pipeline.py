"""Files to turns: read span batches, group them into whole traces, assemble turns.

One file streams through a bounded window (`TraceWindow`, the SDK's export order); with
`whole=True` (several files, whose order says nothing) every span is first grouped by trace id
(`SpillGrouper`), as the Ray engine does. Either way each trace goes through `trace_turns`:
evaluation carrier spans and `gen_ai.evaluation.result` log records (earlier scores) are left out
and counted, an incomplete trace is counted and not scored, gold answers are attached and turns
already in OUT (`--resume`) are skipped, before any scoring.

Duplicates (the same spans exported twice: a Collector retry, overlapping files) are dropped here
too, counted in `TurnCounts.duplicate_spans` and `duplicate_turns`: a span whose trace and span id
were read before (among the last `WindowOptions.remember_spans`) is left out before reassembly,
and a turn whose trace and root span id were already produced (among the last `remember_turns`)
is not produced again, so a duplicate trace gives one turn wherever its copies lie.
"""

from __future__ import annotations

import os
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from groundwire import semconv
from groundwire._types import RagTurn
from groundwire.assembly import Diagnoses, LogRecordData, SpanRecord, has_content, turns_from_spans
from groundwire.offline._grouping import SpillGrouper, partition_count, trace_gap
from groundwire.offline._inputs import input_size
from groundwire.offline._window import TraceWindow
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import Problems, SpanBatch, TraceFormat, read_spans

__all__ = [
    "DEFAULT_WINDOW",
    "TurnCounts",
    "WindowOptions",
    "iter_turns",
    "split_evaluations",
    "trace_turns",
]


@dataclass(frozen=True, slots=True)
class WindowOptions:
    """How traces split over records are reassembled (see `TraceWindow`)."""

    grace: int = 8
    max_spans: int = 200_000
    max_traces: int = 20_000
    remember_spans: int = 200_000
    """How many recent span ids are remembered to recognise a span read twice (~80 B each)."""
    remember_turns: int = 1_000_000
    """How many produced turns are remembered to recognise a trace read twice (~80 B each)."""


@dataclass(slots=True)
class TurnCounts:
    """Counters of the turn stream."""

    traces: int = 0
    turns: int = 0
    resumed: int = 0
    """Turns skipped because OUT already has them."""
    forced_traces: int = 0
    late_spans: int = 0
    peak_held_spans: int = 0
    evaluation_spans: int = 0
    """Evaluation carrier spans in the input (earlier scores), left out of reassembly."""
    evaluation_logs: int = 0
    """`gen_ai.evaluation.result` log records in the input (earlier scores), left out."""
    no_turn: Diagnoses = field(default_factory=Diagnoses)
    """Why traces gave no turn, per trace family (`groundwire.assembly.Diagnoses`)."""
    duplicate_spans: int = 0
    """Spans read a second time (same trace and span id: a Collector retry), left out."""
    duplicate_turns: int = 0
    """Turns assembled a second time (a duplicate trace read after its first copy was released)."""
    incomplete: dict[str, int] = field(default_factory=dict)
    """Traces not scored because some of their spans never arrived, by reason (`trace_gap`)."""
    parent_missing: int = 0
    """Traces scored although a parent span never arrived: every span that names an absent
    parent is a turn root, or a child of one that its children stand in for (an instrumentor
    that never ended a span; docs/assembly.md, "Turns")."""

    @property
    def incomplete_traces(self) -> int:
        """Traces not scored because they were incomplete."""
        return sum(self.incomplete.values())


class _Recent:
    """The last `capacity` keys seen, as 64-bit hashes: repeats found with bounded memory."""

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise ValueError(f"remember_* must be an int >= 0, got {capacity!r}")
        self._capacity = capacity
        self._seen: set[int] = set()
        self._order: deque[int] = deque()

    def first_time(self, key: Hashable) -> bool:
        """True (and remember it) when `key` is not among the recent keys; False for a repeat."""
        if not self._capacity:
            return True
        fingerprint = hash(key)
        if fingerprint in self._seen:
            return False
        self._seen.add(fingerprint)
        self._order.append(fingerprint)
        if len(self._order) > self._capacity:
            self._seen.discard(self._order.popleft())
        return True


def _is_evaluation(span: SpanRecord) -> bool:
    """True for an evaluation carrier span (OpenInference kind EVALUATOR): a score, not a turn."""
    return span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.SPAN_KIND_EVALUATOR


def _is_result_event(record: LogRecordData) -> bool:
    """True for a log-based `gen_ai.evaluation.result` event: an earlier score, not a turn."""
    return record.event_name == semconv.GEN_AI_EVALUATION_RESULT_EVENT


def split_evaluations(spans: list[SpanRecord]) -> tuple[list[SpanRecord], set[str]]:
    """The spans without evaluation carrier spans, and the ids of those left out."""
    if not any(_is_evaluation(span) for span in spans):
        return spans, set()
    kept = [span for span in spans if not _is_evaluation(span)]
    return kept, {span.span_id for span in spans if _is_evaluation(span)}


DEFAULT_WINDOW: Final = WindowOptions()
"""The reassembly window used unless one is given."""


def trace_turns(
    spans: list[SpanRecord],
    counts: TurnCounts,
    *,
    expected: ExpectedAnswers | None = None,
    skip: Collection[tuple[str, str]] = (),
    absent: Collection[str] = (),
    logs: Sequence[LogRecordData] = (),
    seen_turns: _Recent | None = None,
) -> Iterator[RagTurn]:
    """The turns of one trace, counted: none when it is incomplete (counted by reason), a turn
    produced before (`seen_turns`) dropped as a duplicate, resumed ones skipped, gold attached."""
    counts.traces += 1
    gap = trace_gap(spans, absent)
    turns = turns_from_spans(spans, logs=logs)
    if gap is not None:
        if not turns or not _gap_is_a_turn_boundary(spans, turns, absent):
            counts.incomplete[gap] = counts.incomplete.get(gap, 0) + 1
            return
        counts.parent_missing += 1
    if not turns:
        counts.no_turn.add(spans)
    for turn in turns:
        key = (turn.trace_id, turn.span_id)
        known = seen_turns is not None and turn.trace_id and turn.span_id
        if known and not seen_turns.first_time(key):  # type: ignore[union-attr]
            counts.duplicate_turns += 1
            continue
        counts.turns += 1
        if skip and (turn.trace_id or "", turn.span_id or "") in skip:
            counts.resumed += 1
            continue
        yield expected.attach(turn) if expected is not None else turn


def _gap_is_a_turn_boundary(
    spans: list[SpanRecord], turns: list[RagTurn], absent: Collection[str]
) -> bool:
    """True when every span naming an absent parent is a turn's root, or a child of the missing
    parent a turn stands in for: the turns are whole, only the span around them never arrived."""
    ids = {span.span_id for span in spans}
    roots = {turn.span_id for turn in turns}
    return all(
        span.span_id in roots or span.parent_span_id in roots
        for span in spans
        if not span.is_local_root
        and span.parent_span_id not in ids
        and span.parent_span_id not in absent
    )


_REMEMBERED_EVALUATIONS: Final = 100_000
"""How many left-out evaluation span ids the window path remembers (their children are no gap)."""


class _Intake:
    """What both paths do to each record before grouping: drop spans read before (counted),
    count earlier results that came as log records, hold message-content events per trace."""

    def __init__(
        self,
        counts: TurnCounts,
        window: WindowOptions,
        expected: ExpectedAnswers | None,
        skip: Collection[tuple[str, str]],
    ) -> None:
        self.counts = counts
        self.expected = expected
        self.skip = skip
        self.max_traces = window.max_traces
        self.seen_spans = _Recent(window.remember_spans)
        self.seen_turns = _Recent(window.remember_turns)
        self.held_logs: dict[str, list[LogRecordData]] = {}

    def spans(self, batch: SpanBatch) -> list[SpanRecord]:
        """The batch's spans not read before; its log records counted or held."""
        counts = self.counts
        if batch.logs:
            counts.evaluation_logs += sum(map(_is_result_event, batch.logs))
            for log in batch.logs:
                if has_content(log):
                    self.held_logs.setdefault(log.trace_id or "", []).append(log)
                    while len(self.held_logs) > self.max_traces:
                        del self.held_logs[next(iter(self.held_logs))]
        seen = self.seen_spans
        spans = [s for s in batch.spans if seen.first_time((s.trace_id, s.span_id))]
        counts.duplicate_spans += len(batch.spans) - len(spans)
        return spans

    def logs_of(self, spans: list[SpanRecord]) -> list[LogRecordData]:
        """The held message-content events of this trace (released)."""
        if not self.held_logs or not spans:
            return []
        return self.held_logs.pop(spans[0].trace_id, [])

    def turns(self, trace: list[SpanRecord], absent: Collection[str]) -> Iterator[RagTurn]:
        """One complete trace's turns (`absent`: span ids of left-out evaluation spans)."""
        return trace_turns(
            trace,
            self.counts,
            expected=self.expected,
            skip=self.skip,
            absent=absent,
            logs=self.logs_of(trace),
            seen_turns=self.seen_turns,
        )


def iter_turns(
    paths: Iterable[str | os.PathLike[str]],
    problems: Problems,
    counts: TurnCounts,
    *,
    fmt: TraceFormat | None = None,
    window: WindowOptions = DEFAULT_WINDOW,
    expected: ExpectedAnswers | None = None,
    skip: Collection[tuple[str, str]] = (),
    whole: bool = False,
    on_read: Callable[[], bool] | None = None,
    batches: Iterable[SpanBatch] | None = None,
) -> Iterator[RagTurn]:
    """Every turn in the files (or in `batches`, read instead): as traces complete in the
    window, or (`whole`) by `order_key` after grouping every span by trace.

    `on_read` is called after each record while `whole` grouping reads (no turn comes out until
    every file is read); when it returns True, reading stops and no turn is given.
    """
    intake = _Intake(counts, window, expected, skip)
    paths = list(paths)
    source = read_spans(paths, problems, fmt=fmt) if batches is None else batches
    if whole:
        yield from _grouped_turns(paths, source, intake, on_read=on_read)
        return
    traces = TraceWindow(
        grace=window.grace, max_spans=window.max_spans, max_traces=window.max_traces
    )
    evaluations: OrderedDict[str, None] = OrderedDict()

    try:
        for batch in source:
            spans, left_out = split_evaluations(intake.spans(batch))
            if left_out:
                counts.evaluation_spans += len(left_out)
                evaluations.update(dict.fromkeys(left_out))
                while len(evaluations) > _REMEMBERED_EVALUATIONS:
                    evaluations.popitem(last=False)
            for trace in traces.add(spans):
                yield from intake.turns(trace, evaluations)
        for trace in traces.flush():
            yield from intake.turns(trace, evaluations)
    finally:
        counts.forced_traces = traces.forced
        counts.late_spans = traces.late_spans
        counts.peak_held_spans = traces.peak_spans


def _grouped_turns(
    paths: Sequence[str | os.PathLike[str]],
    source: Iterable[SpanBatch],
    intake: _Intake,
    *,
    on_read: Callable[[], bool] | None,
) -> Iterator[RagTurn]:
    """Read every record, group spans by trace id on disk, then assemble each trace whole."""
    counts = intake.counts
    sizes = [_size(path) for path in paths]
    compressed = any(Path(path).suffix.lower() in (".gz", ".zst", ".zstd") for path in paths)
    with SpillGrouper(partition_count(sum(sizes), compressed)) as grouper:
        for batch in source:
            grouper.add(intake.spans(batch))
            if on_read is not None and on_read():
                return
        for trace in grouper.traces():
            spans, left_out = split_evaluations(trace)
            counts.evaluation_spans += len(left_out)
            yield from intake.turns(spans, left_out)


def _size(path: str | os.PathLike[str]) -> int:
    """The file's (or object's) size, 0 when it cannot be read (the reader reports it)."""
    return input_size(path)
