"""Files to turns: read span batches, reassemble traces in a bounded window, assemble turns.

The one streaming path both engines use (Ray runs it once per file). Evaluation carrier spans
and `gen_ai.evaluation.result` log records (earlier scores, e.g. from online scoring into the same
file) are left out and counted, gold answers are attached and turns already in OUT (`--resume`)
are skipped here, before any scoring.

Duplicates (the same spans exported twice: a Collector retry, overlapping files) are dropped here
too, counted in `TurnCounts.duplicate_spans` and `duplicate_turns`: a span whose trace and span id
were read before (among the last `WindowOptions.remember_spans`) is left out before reassembly,
and a turn whose trace and root span id were already produced (among the last `remember_turns`)
is not produced again, so a duplicate trace gives one turn wherever its copies lie.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Collection, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from groundwire import semconv
from groundwire._types import RagTurn
from groundwire.assembly import Diagnoses, SpanRecord, turns_from_spans
from groundwire.assembly._events import has_content
from groundwire.assembly._log_record import LogRecordData
from groundwire.offline._window import TraceWindow
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import Problems, TraceFormat, read_spans
from groundwire.offline.readers._common import SpanBatch

__all__ = ["DEFAULT_WINDOW", "TurnCounts", "WindowOptions", "iter_turns"]


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


DEFAULT_WINDOW: Final = WindowOptions()
"""The reassembly window used unless one is given."""


def iter_turns(
    paths: Iterable[str | os.PathLike[str]],
    problems: Problems,
    counts: TurnCounts,
    *,
    fmt: TraceFormat | None = None,
    window: WindowOptions = DEFAULT_WINDOW,
    expected: ExpectedAnswers | None = None,
    skip: Collection[tuple[str, str]] = (),
    batches: Iterable[SpanBatch] | None = None,
) -> Iterator[RagTurn]:
    """Every turn in the files (or in `batches`, read instead), in the order traces complete."""
    traces = TraceWindow(
        grace=window.grace, max_spans=window.max_spans, max_traces=window.max_traces
    )
    seen_spans = _Recent(window.remember_spans)
    seen_turns = _Recent(window.remember_turns)
    held_logs: dict[str, list[LogRecordData]] = {}
    """Message-content events waiting for their trace (bounded like the traces held)."""

    def turns_of(spans: list[SpanRecord]) -> Iterator[RagTurn]:
        """The turns of one complete trace, counted; resumed ones skipped, gold answers attached."""
        counts.traces += 1
        logs = held_logs.pop(spans[0].trace_id, ()) if held_logs and spans else ()
        turns = turns_from_spans(spans, logs=logs)
        if not turns:
            counts.no_turn.add(spans)
        for turn in turns:
            key = (turn.trace_id, turn.span_id)
            if turn.trace_id and turn.span_id and not seen_turns.first_time(key):
                counts.duplicate_turns += 1
                continue
            counts.turns += 1
            if skip and (turn.trace_id or "", turn.span_id or "") in skip:
                counts.resumed += 1
                continue
            yield expected.attach(turn) if expected is not None else turn

    try:
        source = read_spans(paths, problems, fmt=fmt) if batches is None else batches
        for batch in source:
            if batch.logs:
                counts.evaluation_logs += sum(map(_is_result_event, batch.logs))
            for log in batch.logs:
                if has_content(log):
                    held_logs.setdefault(log.trace_id or "", []).append(log)
                    while len(held_logs) > window.max_traces:
                        del held_logs[next(iter(held_logs))]
            spans = [s for s in batch.spans if seen_spans.first_time((s.trace_id, s.span_id))]
            counts.duplicate_spans += len(batch.spans) - len(spans)
            if any(_is_evaluation(span) for span in spans):
                kept = [span for span in spans if not _is_evaluation(span)]
                counts.evaluation_spans += len(spans) - len(kept)
                spans = kept
            for trace in traces.add(spans):
                yield from turns_of(trace)
        for trace in traces.flush():
            yield from turns_of(trace)
    finally:
        counts.forced_traces = traces.forced
        counts.late_spans = traces.late_spans
        counts.peak_held_spans = traces.peak_spans
