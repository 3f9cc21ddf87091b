"""The turn stream's steps (`groundwire.offline._pipeline`), fed real spans in memory.

Spans come from the OpenTelemetry SDK (`record_turns`: chain > retriever + LLM per trace) and go
in as `SpanBatch`es, so each promise is checked on the counters and turns the stream gives: the
bounded memory of recent ids, evaluation carrier spans and result logs left out and counted,
incomplete traces counted by reason, resumed and duplicate turns, gold answers, whole grouping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from groundwire.assembly import LogRecordData, SpanRecord
from groundwire.offline import Problems, TurnCounts, WindowOptions, _pipeline, iter_turns
from groundwire.offline._pipeline import _Recent, split_evaluations, trace_turns
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import SpanBatch
from tests.offline._traces import record_turns

_EVALUATOR = {"openinference.span.kind": "EVALUATOR"}


@pytest.fixture(scope="module")
def traces() -> list[list[SpanRecord]]:
    """Four traces of three spans each (children first, the root last: the SDK's end order)."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in record_turns(4):
        record = SpanRecord.from_readable(span)
        by_trace.setdefault(record.trace_id, []).append(record)
    return list(by_trace.values())


def _root(trace: list[SpanRecord]) -> SpanRecord:
    return next(span for span in trace if span.parent_span_id is None)


def _evaluation(trace: list[SpanRecord], number: int) -> SpanRecord:
    """An evaluation carrier span under the trace's root."""
    root = _root(trace)
    return replace(
        root,
        span_id=f"{number:016x}",
        parent_span_id=root.span_id,
        name="eval",
        attributes=dict(_EVALUATOR),
    )


def _stream(
    batches: list[list[SpanRecord]],
    counts: TurnCounts,
    *,
    window: WindowOptions | None = None,
    whole: bool = False,
    on_read: Callable[[], bool] | None = None,
    logs: list[LogRecordData] | None = None,
) -> list[tuple[str | None, str | None]]:
    records = [SpanBatch(spans=batch, where=f"b{i}") for i, batch in enumerate(batches)]
    if logs:
        records[0] = replace(records[0], logs=logs)
    turns = iter_turns(
        [],
        Problems(),
        counts,
        window=window or WindowOptions(),
        whole=whole,
        on_read=on_read,
        batches=records,
    )
    return [(turn.trace_id, turn.span_id) for turn in turns]


@pytest.mark.parametrize("capacity", [-1, True, 1.5, "3"])
def test_a_bad_memory_size_is_a_clear_error(capacity: object) -> None:
    """remember_spans / remember_turns must be ints >= 0; the message names the value."""
    with pytest.raises(ValueError, match=r"remember_\* must be an int >= 0, got"):
        _Recent(capacity)  # type: ignore[arg-type]


def test_recent_keys_are_remembered_up_to_the_capacity() -> None:
    """The last `capacity` keys are repeats; an older one is forgotten (bounded memory)."""
    recent = _Recent(2)
    assert recent.first_time("a") and recent.first_time("b")
    assert not recent.first_time("a") and not recent.first_time("b")
    assert recent.first_time("c")
    assert not recent.first_time("b") and not recent.first_time("c")
    assert recent.first_time("a")
    assert _Recent(0).first_time("a") and _Recent(0).first_time("a")


def test_split_evaluations_leaves_out_carrier_spans_and_names_them(
    traces: list[list[SpanRecord]],
) -> None:
    """Evaluation carrier spans are taken out and their ids returned; without any, the list is
    given back as it is."""
    trace = traces[0]
    kept, left_out = split_evaluations(trace)
    assert kept is trace and left_out == set()
    evaluation = _evaluation(trace, 1)
    kept, left_out = split_evaluations([*trace, evaluation])
    assert kept == trace and left_out == {evaluation.span_id}


def test_trace_turns_counts_resumes_and_attaches_gold(traces: list[list[SpanRecord]]) -> None:
    """A whole trace gives its turn with gold attached; a resumed one is counted, not given."""
    gold = ExpectedAnswers()
    gold.add({"trace_id": traces[0][0].trace_id, "answer": "330 metres"}, "gold:1")
    counts = TurnCounts()
    turns = list(trace_turns(traces[0], counts, expected=gold))
    assert [turn.expected for turn in turns] == [("330 metres",)]
    assert counts.traces == counts.turns == 1 and counts.resumed == 0 and gold.matched == 1
    skip = {(traces[1][0].trace_id, _root(traces[1]).span_id)}
    assert list(trace_turns(traces[1], counts, skip=skip)) == []
    assert counts.traces == counts.turns == 2 and counts.resumed == 1
    assert [t.expected for t in trace_turns(traces[2], counts, skip=skip)] == [None]


def test_trace_turns_drops_a_turn_seen_before_and_counts_it(
    traces: list[list[SpanRecord]],
) -> None:
    """With a memory of produced turns, a second copy of a trace gives nothing, counted."""
    counts, seen = TurnCounts(), _Recent(10)
    assert len(list(trace_turns(traces[0], counts, seen_turns=seen))) == 1
    assert list(trace_turns(traces[0], counts, seen_turns=seen)) == []
    assert counts.duplicate_turns == 1 and counts.turns == 1 and counts.traces == 2
    assert len(list(trace_turns(traces[0], counts))) == 1


def test_an_incomplete_trace_is_counted_by_reason_and_not_scored(
    traces: list[list[SpanRecord]],
) -> None:
    """A trace missing its root (a lone retriever) gives no turn and is counted as incomplete; a
    trace with its root but a lost middle span is counted under its own reason."""
    counts = TurnCounts()
    children = [span for span in traces[0] if span.parent_span_id is not None]
    retriever = [span for span in children if span.name == "retrieve"]
    assert list(trace_turns(retriever, counts)) == []
    assert list(trace_turns(retriever, counts)) == []
    (reason,) = counts.incomplete
    assert counts.incomplete == {reason: 2} and counts.incomplete_traces == 2
    lost = replace(children[0], parent_span_id="00000000000000ab")
    assert list(trace_turns([_root(traces[0]), lost, children[1]], counts)) == []
    assert len(counts.incomplete) == 2 and counts.incomplete_traces == 3
    assert counts.parent_missing == 0 and counts.turns == 0


def test_a_turn_whose_parent_never_arrived_is_scored_and_counted(
    traces: list[list[SpanRecord]],
) -> None:
    """A trace whose turn root names a parent that never arrived (an upstream span never
    ended) is whole: scored and counted in `parent_missing`, not as incomplete."""
    trace = traces[0]
    root = _root(trace)
    upstream = replace(root, span_id="00000000000000cd", parent_span_id=None, name="http")
    moved = [
        replace(span, parent_span_id="00000000000000ef") if span is root else span for span in trace
    ]
    counts = TurnCounts()
    turns = list(trace_turns([upstream, *moved], counts))
    assert [turn.span_id for turn in turns] == [root.span_id]
    assert counts.parent_missing == 1 and counts.incomplete == {} and counts.turns == 1


def test_a_trace_without_a_turn_is_diagnosed(traces: list[list[SpanRecord]]) -> None:
    """A whole trace that gives no turn is recorded in `no_turn` for the report."""
    counts = TurnCounts()
    lone = replace(_root(traces[0]), attributes={})
    assert list(trace_turns([lone], counts)) == []
    assert counts.traces == 1 and counts.turns == 0 and counts.no_turn
    assert counts.incomplete == {}


def test_the_window_leaves_out_evaluations_and_their_children(
    traces: list[list[SpanRecord]],
) -> None:
    """Evaluation spans are counted and left out; a span under one is no gap in its trace."""
    trace = traces[0]
    evaluation = _evaluation(trace, 1)
    under = replace(
        evaluation,
        span_id=f"{2:016x}",
        parent_span_id=evaluation.span_id,
        attributes={"openinference.span.kind": "LLM"},
        name="judge",
    )
    counts = TurnCounts()
    keys = _stream([[evaluation], [under, *trace]], counts)
    assert keys == [(trace[0].trace_id, _root(trace).span_id)]
    assert counts.evaluation_spans == 1 and counts.incomplete == {}


def test_the_window_reports_its_forced_late_and_peak_counts(
    traces: list[list[SpanRecord]],
) -> None:
    """The window's own counters reach `TurnCounts` when the stream ends."""
    counts = TurnCounts()
    spans = [span for trace in traces for span in trace]
    keys = _stream([spans], counts)
    assert len(keys) == 4 and counts.peak_held_spans == 12
    late = TurnCounts()
    window = WindowOptions(max_traces=1, remember_spans=0, remember_turns=0)
    interleaved = [traces[0][:1], traces[1][:1], traces[0][1:], traces[1][1:]]
    _stream(interleaved, late, window=window)
    assert late.forced_traces >= 1 and late.late_spans >= 1


def test_result_logs_are_counted_and_content_events_held_for_their_trace(
    traces: list[list[SpanRecord]],
) -> None:
    """`gen_ai.evaluation.result` log records are counted as earlier scores, not turns."""
    trace = traces[0]
    result = LogRecordData(
        event_name="gen_ai.evaluation.result",
        trace_id=trace[0].trace_id,
        span_id=_root(trace).span_id,
        time_ns=1,
    )
    plain = replace(result, event_name=None)
    counts = TurnCounts()
    keys = _stream([trace], counts, logs=[result, plain, result])
    assert len(keys) == 1 and counts.evaluation_logs == 2


def test_whole_grouping_gives_every_trace_and_counts_evaluations(
    traces: list[list[SpanRecord]],
) -> None:
    """With `whole`, spans split over records and mixed with evaluations give each turn once."""
    evaluation = _evaluation(traces[1], 7)
    halves = [traces[0][:1] + traces[1][:2], [evaluation, *traces[1][2:], *traces[0][1:]]]
    counts = TurnCounts()
    keys = _stream([*halves, traces[0]], counts, whole=True)
    assert sorted(keys) == sorted((t[0].trace_id, _root(t).span_id) for t in traces[:2])
    assert counts.evaluation_spans == 1 and counts.duplicate_spans == 3 and counts.traces == 2


def test_whole_grouping_stops_when_on_read_says_so(traces: list[list[SpanRecord]]) -> None:
    """`on_read` is asked after each record; True stops reading and gives no turn."""
    asked: list[int] = []

    def stop_at_second() -> bool:
        asked.append(1)
        return len(asked) == 2

    counts = TurnCounts()
    assert (
        _stream([traces[0], traces[1], traces[2]], counts, whole=True, on_read=stop_at_second) == []
    )
    assert len(asked) == 2 and counts.traces == 0
    keep: list[int] = []
    keys = _stream([traces[0], traces[1]], TurnCounts(), whole=True, on_read=lambda: bool(keep))
    assert len(keys) == 2


def test_whole_grouping_reads_files_given_by_path(tmp_path: Path) -> None:
    """Paths (plain and compressed names) are read and grouped; a missing one is a problem."""
    from tests.offline._traces import gzip_copy, write_groundwire_jsonl

    plain = write_groundwire_jsonl(record_turns(3), tmp_path / "a.jsonl", batch=2)
    packed = gzip_copy(write_groundwire_jsonl(record_turns(2), tmp_path / "b.jsonl", batch=2))
    counts = TurnCounts()
    turns = list(iter_turns([plain, packed], Problems(), counts, whole=True))
    assert len(turns) == 5 and counts.turns == 5


def _answer_from_log(trace: list[SpanRecord]) -> tuple[list[SpanRecord], LogRecordData]:
    """The trace with its answers taken off the spans, and a `gen_ai.choice` event holding one."""
    llm = next(span for span in trace if span.name == "llm")
    bare = [
        replace(span, attributes={k: v for k, v in span.attributes.items() if k != "output.value"})
        for span in trace
    ]
    event = LogRecordData(
        event_name="gen_ai.choice",
        trace_id=llm.trace_id,
        span_id=llm.span_id,
        time_ns=5,
        body={"message": {"content": "From the log."}, "index": 0},
    )
    return bare, event


def _answers(batches: list[SpanBatch], window: WindowOptions, whole: bool = False) -> list[str]:
    turns = iter_turns([], Problems(), TurnCounts(), window=window, whole=whole, batches=batches)
    return [turn.answer for turn in turns]


def test_content_events_are_held_for_their_trace_within_max_traces(
    traces: list[list[SpanRecord]],
) -> None:
    """A message-content event read before its spans gives the turn its answer; the events of
    at most `max_traces` traces are held, the oldest dropped first."""
    bare, event = _answer_from_log(traces[0])
    other = replace(event, trace_id=traces[1][0].trace_id)
    lone = [replace(_root(traces[2]), attributes={})]
    window = WindowOptions(max_traces=1)
    kept = [SpanBatch([], "logs", logs=[other, event]), SpanBatch(lone, "a"), SpanBatch(bare, "b")]
    assert _answers(kept, window) == ["From the log."]
    dropped = [SpanBatch([], "logs", logs=[event, other]), SpanBatch(bare, "b")]
    assert _answers(dropped, window) == []
    both = [SpanBatch([], "logs", logs=[other, event]), SpanBatch(bare, "b")]
    assert _answers(both, WindowOptions()) == ["From the log."]


def test_content_events_reach_whole_grouping_and_evaluation_only_traces_pass(
    traces: list[list[SpanRecord]],
) -> None:
    """With `whole`, held events reach their trace; a trace of evaluation spans alone gives
    nothing (and no error) while events are held."""
    bare, event = _answer_from_log(traces[0])
    only_evaluation = _evaluation(traces[3], 9)
    batches = [SpanBatch([only_evaluation], "e", logs=[event]), SpanBatch(bare, "b")]
    assert _answers(batches, WindowOptions(), whole=True) == ["From the log."]


def test_result_logs_are_summed_over_records(traces: list[list[SpanRecord]]) -> None:
    """Earlier results in several records all count."""
    result = LogRecordData(
        event_name="gen_ai.evaluation.result", trace_id=None, span_id=None, time_ns=1
    )
    counts = TurnCounts()
    batches = [SpanBatch([], "a", logs=[result]), SpanBatch(traces[0], "b", logs=[result])]
    list(iter_turns([], Problems(), counts, batches=batches))
    assert counts.evaluation_logs == 2


def test_evaluations_in_several_records_are_summed(traces: list[list[SpanRecord]]) -> None:
    """Evaluation spans count across records, in the window and in whole grouping; in whole
    grouping a span under a left-out evaluation is no gap either."""
    first, second = _evaluation(traces[0], 1), _evaluation(traces[1], 2)
    under = replace(
        first,
        span_id=f"{3:016x}",
        parent_span_id=first.span_id,
        attributes={"openinference.span.kind": "LLM"},
        name="judge",
    )
    for whole in (False, True):
        counts = TurnCounts()
        _stream([[first], [second, under], *traces[:2]], counts, whole=whole)
        assert counts.evaluation_spans == 2 and counts.turns == 2
        assert counts.incomplete == {} and counts.parent_missing == 0


def test_a_span_under_a_left_out_evaluation_is_not_a_missing_parent(
    traces: list[list[SpanRecord]],
) -> None:
    """The window passes the left-out evaluation ids on: the trace is whole, not scored as one
    whose parent never arrived."""
    trace = traces[0]
    evaluation = _evaluation(trace, 1)
    under = replace(
        evaluation, span_id=f"{2:016x}", parent_span_id=evaluation.span_id, name="j", attributes={}
    )
    counts = TurnCounts()
    assert len(_stream([[evaluation], [under, *trace]], counts)) == 1
    assert counts.parent_missing == 0 and counts.incomplete == {}


def test_the_evaluation_memory_keeps_the_latest_ids(
    traces: list[list[SpanRecord]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room for one left-out evaluation id, the latest is kept and older ones forgotten:
    a span under a forgotten evaluation makes its trace incomplete."""
    monkeypatch.setattr(_pipeline, "_REMEMBERED_EVALUATIONS", 1)
    trace = traces[2]
    first, second = _evaluation(trace, 1), _evaluation(traces[3], 2)
    under = replace(
        first, span_id=f"{3:016x}", parent_span_id=first.span_id, name="j", attributes={}
    )
    counts = TurnCounts()
    assert len(_stream([[first], [under, *trace]], counts)) == 1
    forgot = TurnCounts()
    assert _stream([[first], [second], [under, *trace]], forgot) == []
    assert forgot.incomplete_traces == 1


def test_the_window_uses_the_span_bound_it_is_given(traces: list[list[SpanRecord]]) -> None:
    """`max_spans` reaches the window: a small bound forces traces out early."""
    counts = TurnCounts()
    interleaved = [traces[0][:1], traces[1][:1], traces[2][:1], traces[0][1:], traces[1][1:]]
    _stream(interleaved, counts, window=WindowOptions(max_spans=2))
    assert counts.forced_traces >= 1


def test_parent_missing_and_lost_spans_are_told_apart(traces: list[list[SpanRecord]]) -> None:
    """Each trace scored without its parent counts once more; a lost LLM span under a present
    root makes the trace incomplete; a span under a present non-root child stays whole."""
    children = [span for span in traces[0] if span.parent_span_id is not None]
    counts = TurnCounts()
    assert len(list(trace_turns(children, counts))) == 1
    assert len(list(trace_turns(children, counts))) == 1
    assert counts.parent_missing == 2 and counts.incomplete == {}
    retriever = next(span for span in children if span.name == "retrieve")
    below = replace(retriever, span_id=f"{4:016x}", parent_span_id=retriever.span_id, name="x")
    below = replace(below, attributes={})
    assert len(list(trace_turns([*children, below], counts))) == 1
    assert counts.parent_missing == 3 and counts.incomplete == {}
    llm = next(span for span in children if span.name == "llm")
    lost = replace(llm, parent_span_id="00000000000000ab")
    assert list(trace_turns([_root(traces[0]), retriever, lost], counts)) == []
    assert counts.incomplete_traces == 1 and counts.parent_missing == 3


def test_a_resumed_or_duplicate_first_turn_does_not_hide_the_next(
    traces: list[list[SpanRecord]],
) -> None:
    """In a trace of two turns, skipping the first (resumed, or produced before) still gives the
    second."""
    trace_id = traces[0][0].trace_id
    two = [*traces[0], *(replace(span, trace_id=trace_id) for span in traces[1])]
    order = [turn.span_id for turn in trace_turns(two, TurnCounts())]
    assert len(order) == 2
    skip = {(trace_id, order[0] or "")}
    assert [t.span_id for t in trace_turns(two, TurnCounts(), skip=skip)] == order[1:]
    seen = _Recent(10)
    assert seen.first_time((trace_id, order[0]))
    assert [t.span_id for t in trace_turns(two, TurnCounts(), seen_turns=seen)] == order[1:]


def test_the_window_checks_the_grace_it_is_given() -> None:
    """`grace` reaches the window, which refuses a negative one with a clear message."""
    with pytest.raises(ValueError, match="grace must be an int >= 0"):
        list(iter_turns([], Problems(), TurnCounts(), window=WindowOptions(grace=-1), batches=[]))


def test_an_evaluation_only_trace_passes_while_other_events_are_held(
    traces: list[list[SpanRecord]],
) -> None:
    """With events held for a trace that never comes, a trace of evaluation spans alone (no
    span left once they are taken out) gives nothing and no error."""
    _, event = _answer_from_log(traces[1])
    only_evaluation = _evaluation(traces[3], 9)
    batches = [SpanBatch([only_evaluation], "e", logs=[event]), SpanBatch(traces[0], "t")]
    assert len(_answers(batches, WindowOptions(), whole=True)) == 1
