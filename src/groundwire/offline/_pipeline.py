"""Files to turns: read span batches, reassemble whole traces, assemble turns.

One file streams through a bounded window (`TraceWindow`, the SDK's export order); with
`whole=True` (several files, whose order says nothing) every span is first grouped by trace id
(`SpillGrouper`), as the Ray engine does. Either way each trace goes through `trace_turns`:
evaluation carrier spans (earlier scores) are left out, an incomplete trace is counted and not
scored, gold answers are attached and turns already in OUT (`--resume`) are skipped, before any
scoring.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from groundwire import semconv
from groundwire._types import RagTurn
from groundwire.assembly import SpanRecord, turns_from_spans
from groundwire.offline._grouping import SpillGrouper, partition_count, trace_gap
from groundwire.offline._window import TraceWindow
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import Problems, TraceFormat, read_spans

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
    incomplete: dict[str, int] = field(default_factory=dict)
    """Traces not scored because some of their spans never arrived, by reason (`trace_gap`)."""

    @property
    def incomplete_traces(self) -> int:
        """Traces not scored because they were incomplete."""
        return sum(self.incomplete.values())


def _is_evaluation(span: SpanRecord) -> bool:
    """True for an evaluation carrier span (OpenInference kind EVALUATOR): a score, not a turn."""
    return span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.SPAN_KIND_EVALUATOR


DEFAULT_WINDOW: Final = WindowOptions()
"""The reassembly window used unless one is given."""


def split_evaluations(spans: list[SpanRecord]) -> tuple[list[SpanRecord], set[str]]:
    """The spans without evaluation carrier spans, and the ids of those left out."""
    if not any(_is_evaluation(span) for span in spans):
        return spans, set()
    kept = [span for span in spans if not _is_evaluation(span)]
    return kept, {span.span_id for span in spans if _is_evaluation(span)}


def trace_turns(
    spans: list[SpanRecord],
    counts: TurnCounts,
    *,
    expected: ExpectedAnswers | None = None,
    skip: Collection[tuple[str, str]] = (),
    absent: Collection[str] = (),
) -> Iterator[RagTurn]:
    """The turns of one trace, counted; none when it is incomplete; resumed ones skipped."""
    counts.traces += 1
    gap = trace_gap(spans, absent)
    if gap is not None:
        counts.incomplete[gap] = counts.incomplete.get(gap, 0) + 1
        return
    for turn in turns_from_spans(spans):
        counts.turns += 1
        if skip and (turn.trace_id or "", turn.span_id or "") in skip:
            counts.resumed += 1
            continue
        yield expected.attach(turn) if expected is not None else turn


_REMEMBERED_EVALUATIONS: Final = 100_000
"""How many left-out evaluation span ids the window path remembers (their children are no gap)."""


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
) -> Iterator[RagTurn]:
    """Every turn in the files: as traces complete in the window, or (`whole`) by `order_key`.

    `on_read` is called after each record while `whole` grouping reads (no turn comes out until
    every file is read); when it returns True, reading stops and no turn is given.
    """
    if whole:
        yield from _grouped_turns(
            list(paths), problems, counts, fmt=fmt, expected=expected, skip=skip, on_read=on_read
        )
        return
    traces = TraceWindow(
        grace=window.grace, max_spans=window.max_spans, max_traces=window.max_traces
    )
    evaluations: OrderedDict[str, None] = OrderedDict()
    try:
        for batch in read_spans(paths, problems, fmt=fmt):
            spans, left_out = split_evaluations(batch.spans)
            if left_out:
                counts.evaluation_spans += len(left_out)
                evaluations.update(dict.fromkeys(left_out))
                while len(evaluations) > _REMEMBERED_EVALUATIONS:
                    evaluations.popitem(last=False)
            for trace in traces.add(spans):
                yield from trace_turns(
                    trace, counts, expected=expected, skip=skip, absent=evaluations
                )
        for trace in traces.flush():
            yield from trace_turns(trace, counts, expected=expected, skip=skip, absent=evaluations)
    finally:
        counts.forced_traces = traces.forced
        counts.late_spans = traces.late_spans
        counts.peak_held_spans = traces.peak_spans


def _grouped_turns(
    paths: Sequence[str | os.PathLike[str]],
    problems: Problems,
    counts: TurnCounts,
    *,
    fmt: TraceFormat | None,
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
    on_read: Callable[[], bool] | None,
) -> Iterator[RagTurn]:
    """Read every file, group spans by trace id on disk, then assemble each trace whole."""
    sizes = [_size(path) for path in paths]
    compressed = any(Path(path).suffix.lower() in (".gz", ".zst", ".zstd") for path in paths)
    with SpillGrouper(partition_count(sum(sizes), compressed)) as grouper:
        for batch in read_spans(paths, problems, fmt=fmt):
            grouper.add(batch.spans)
            if on_read is not None and on_read():
                return
        for trace in grouper.traces():
            spans, left_out = split_evaluations(trace)
            counts.evaluation_spans += len(left_out)
            yield from trace_turns(spans, counts, expected=expected, skip=skip, absent=left_out)


def _size(path: str | os.PathLike[str]) -> int:
    """The file's size on disk, 0 when it cannot be read (the reader reports it)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
