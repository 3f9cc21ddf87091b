"""One run traced by two instrumentors gives one turn (docs/assembly.md, "One run traced by two
instrumentors"): `drop_duplicates` offline, `DuplicateFilter` live, from hand-built records.
"""

from __future__ import annotations

from groundwire import RagTurn
from groundwire.assembly import SpanRecord, turns_from_spans
from groundwire.assembly._duplicates import DuplicateFilter, drop_duplicates
from tests.assembly_records import oi, oi_docs, rag_trace, record, tid


def _turn(query: str = "q", answer: str = "a", *contexts: str) -> RagTurn:
    return RagTurn(query=query, contexts=list(contexts) or ["d"], answer=answer)


def _root(number: int, scope: str | None, start: int, end: int | None) -> SpanRecord:
    return record(number, start=start, end=end, scope=scope)


def test_one_instrumentation_keeps_every_turn() -> None:
    """Roots all from one scope: nothing is dropped, even identical overlapping turns."""
    entries = [(_turn(), _root(1, "a", 0, 10), 2), (_turn(), _root(2, "a", 0, 10), 0)]
    assert drop_duplicates(entries) == [entries[0][0], entries[1][0]]


def test_best_ranked_duplicate_stays_at_its_place() -> None:
    """Same turn from two scopes overlapping in time: the lower dialect rank stays."""
    worse, other, better = _turn(answer="x"), _turn(query="other"), _turn(answer="x")
    entries = [
        (other, _root(2, "openllmetry", 0, 10), 2),
        (worse, _root(1, "openllmetry", 0, 10), 2),
        (better, _root(3, "openinference", 5, 20), 0),
    ]
    kept = drop_duplicates(entries)
    assert len(kept) == 2
    assert kept[0] is other and kept[1] is better


def test_equal_rank_keeps_the_first() -> None:
    """On equal ranks the earlier entry stays."""
    first, second = _turn(), _turn()
    entries = [(first, _root(1, "a", 0, 10), 1), (second, _root(2, "b", 0, 10), 1)]
    (kept,) = drop_duplicates(entries)
    assert kept is first


def test_turns_that_differ_or_do_not_overlap_are_kept() -> None:
    """Different contexts, disjoint times or the same scope: separate runs."""
    entries = [
        (_turn("q", "a", "d1"), _root(1, "a", 0, 10), 0),
        (_turn("q", "a", "d2"), _root(2, "b", 0, 10), 1),
        (_turn("q", "a", "d1"), _root(3, "b", 11, 20), 1),
        (_turn("q", "a", "d1"), _root(4, "a", 5, 6), 1),
    ]
    assert len(drop_duplicates(entries)) == 4


def test_touching_and_open_roots_overlap() -> None:
    """Time spans that share an end point overlap; an open root spans its start only."""
    touching = [(_turn(), _root(1, "a", 0, 10), 0), (_turn(), _root(2, "b", 10, 20), 1)]
    assert len(drop_duplicates(touching)) == 1
    reverse = [(_turn(), _root(1, "a", 10, 20), 0), (_turn(), _root(2, "b", 0, 10), 1)]
    assert len(drop_duplicates(reverse)) == 1
    open_inside = [(_turn(), _root(1, "a", 5, None), 0), (_turn(), _root(2, "b", 0, 10), 1)]
    assert len(drop_duplicates(open_inside)) == 1
    open_after = [(_turn(), _root(1, "a", 11, None), 0), (_turn(), _root(2, "b", 0, 10), 1)]
    assert len(drop_duplicates(open_after)) == 2
    open_before = [(_turn(), _root(1, "a", 0, 10), 0), (_turn(), _root(2, "b", 11, None), 1)]
    assert len(drop_duplicates(open_before)) == 2
    open_later = [(_turn(), _root(1, "a", 0, 10), 0), (_turn(), _root(2, "b", 5, None), 1)]
    assert len(drop_duplicates(open_later)) == 1


def test_three_records_of_one_run_keep_one() -> None:
    """Each later duplicate is compared with every turn kept so far."""
    entries = [
        (_turn(), _root(1, "a", 0, 10), 2),
        (_turn(), _root(2, "b", 0, 10), 1),
        (_turn(), _root(3, "c", 0, 10), 0),
    ]
    (kept,) = drop_duplicates(entries)
    assert kept is entries[2][0]


def test_turns_from_spans_keeps_the_higher_precedence_dialects_turn() -> None:
    """Two traces of one run: the OpenInference turn stays, the OpenLLMetry one goes."""
    tl = rag_trace(
        trace=tid(1),
        scope="opentelemetry.instrumentation.langchain",
        root={
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": '"q"',
            "traceloop.entity.output": '"a"',
        },
        retriever={
            "gen_ai.operation.name": "vector_db_retrieve",
            "traceloop.entity.output": '{"documents": [{"page_content": "d"}]}',
        },
        model={"llm.request.type": "chat"},
    )
    oi_trace = rag_trace(
        trace=tid(2),
        scope="openinference.instrumentation.langchain",
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=oi("RETRIEVER", **oi_docs("d")),
        model=oi("LLM"),
        start=5,
    )
    (turn,) = turns_from_spans([*tl, *oi_trace])
    assert turn.trace_id == tid(2)
    later = rag_trace(
        trace=tid(3),
        scope="openinference.instrumentation.langchain",
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=oi("RETRIEVER", **oi_docs("d")),
        model=oi("LLM"),
        start=500,
    )
    assert [t.trace_id for t in turns_from_spans([*tl, *oi_trace, *later])] == [tid(2), tid(3)]


def test_live_filter_keeps_the_first_and_counts_the_rest() -> None:
    """`keep` is False for a duplicate of a remembered turn (counted), True otherwise."""
    dedup = DuplicateFilter()
    assert dedup.keep(_turn(), _root(1, "a", 0, 10))
    assert dedup.keep(_turn(), _root(2, "a", 0, 10))
    assert dedup.keep(_turn(), _root(3, "b", 20, 30))
    assert dedup.dropped == 0
    assert not dedup.keep(_turn(), _root(4, "b", 5, 15))
    assert dedup.dropped == 1
    assert dedup.keep(_turn(answer="other"), _root(5, "b", 5, 15))


def test_live_filter_forgets_old_turns() -> None:
    """Only the last `remember` turns are compared; a key seen twice survives one eviction."""
    dedup = DuplicateFilter(remember=2)
    assert dedup.keep(_turn(), _root(1, "a", 0, 10))
    assert dedup.keep(_turn(), _root(2, "a", 100, 110))
    assert dedup.keep(_turn(answer="x"), _root(3, "a", 200, 210))
    assert not dedup.keep(_turn(), _root(4, "b", 100, 110))
    assert dedup.keep(_turn(answer="y"), _root(5, "a", 300, 310))
    assert dedup.keep(_turn(answer="z"), _root(6, "a", 400, 410))
    assert dedup.keep(_turn(), _root(7, "b", 100, 110))
    assert dedup.dropped == 1


def test_live_filter_counts_every_drop_and_tracks_the_evicted_key() -> None:
    """Each duplicate is counted; evicting the oldest turn keeps the newer turns' keys."""
    dedup = DuplicateFilter(remember=2)
    assert dedup.keep(_turn(answer="a1"), _root(1, "a", 0, 10))
    assert dedup.keep(_turn(answer="b1"), _root(2, "a", 0, 10))
    assert dedup.keep(_turn(answer="c1"), _root(3, "a", 20, 30))
    assert not dedup.keep(_turn(answer="b1"), _root(4, "b", 5, 6))
    assert not dedup.keep(_turn(answer="c1"), _root(5, "b", 25, 26))
    assert dedup.dropped == 2


def test_duplicates_are_looked_for_across_traces_only() -> None:
    """Within one trace two identical turns from different scopes both stay."""
    server = record(1, start=0, end=500)
    spans = [server]
    for base, scope in ((10, "a"), (20, "b")):
        spans += [
            record(
                base,
                1,
                start=10,
                end=100,
                scope=scope,
                attributes=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
            ),
            record(
                base + 1,
                base,
                start=20,
                end=30,
                scope=scope,
                attributes=oi("RETRIEVER", **oi_docs("d")),
            ),
            record(base + 2, base, start=40, end=50, scope=scope, attributes=oi("LLM")),
        ]
    assert len(turns_from_spans(spans)) == 2
