"""`turns_from_spans` across traces and `TurnAssembler` (docs/assembly.md, "Live assembly"), from
hand-built records fed in end order: release on local roots, late spans, eviction, `turn_for`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from groundwire import Context
from groundwire.assembly import SpanRecord, TurnAssembler, turns_from_spans
from groundwire.capture import LiveContent, LiveContentStore
from tests.assembly_records import TRACE, oi, oi_docs, rag_trace, record, sid, tid


def _rag(
    trace: str = TRACE, q: str = "q", a: str = "a", d: str = "d", **kw: object
) -> list[SpanRecord]:
    return rag_trace(
        trace=trace,
        root=oi("CHAIN", **{"input.value": q, "output.value": a}),
        retriever=oi("RETRIEVER", **oi_docs(d)),
        model=oi("LLM"),
        **kw,  # type: ignore[arg-type]
    )


def _end_order(records: list[SpanRecord]) -> list[SpanRecord]:
    return sorted(records, key=lambda r: (r.is_local_root, r.end_time_ns or 0))


def _feed(assembler: TurnAssembler, records: list[SpanRecord]) -> list[tuple[str, str, str]]:
    turns = [t for r in _end_order(records) for t in assembler.add(r)]
    return [(t.query, t.context_texts[0] if t.context_texts else "", t.answer) for t in turns]


def test_traces_reusing_span_ids_keep_their_own_facts() -> None:
    """Span ids repeat across traces (unique only within one): each trace reads its own spans.

    Regression: one reader cached facts by span id for every trace, so the second trace's turn
    came out with the first trace's query, contexts and answer.
    """
    first = _rag(tid(1), "q1", "a1", "d1")
    second = _rag(tid(2), "q2", "a2", "d2")
    turns = turns_from_spans([*first, *second])
    assert [(t.trace_id, t.query, t.context_texts, t.answer) for t in turns] == [
        (tid(1), "q1", ["d1"], "a1"),
        (tid(2), "q2", ["d2"], "a2"),
    ]


def test_turn_is_returned_when_its_local_root_ends() -> None:
    """Children are held (pending) until the root ends; then the turn comes out, all released."""
    assembler = TurnAssembler()
    root, retriever, model = _rag()
    assert assembler.add(retriever) == []
    assert assembler.add(model) == []
    assert (assembler.pending_traces, assembler.pending_spans) == (1, 2)
    (turn,) = assembler.add(root)
    assert (turn.query, turn.context_texts, turn.answer) == ("q", ["d"], "a")
    assert (assembler.pending_traces, assembler.pending_spans) == (0, 0)
    assert assembler.flush() == []


def test_spans_ending_after_their_root_are_late() -> None:
    """A child (and its own child) ending after the local root are ignored and counted."""
    assembler = TurnAssembler()
    root, retriever, model = _rag()
    assembler.add(retriever)
    assert len(assembler.add(root)) == 1
    assert assembler.add(model) == []
    assert assembler.add(record(9, 3, start=31, end=32)) == []
    assert assembler.late_spans == 2
    assert assembler.pending_traces == 0


def test_remote_parent_roots_are_released_one_by_one() -> None:
    """Two requests of one distributed trace (remote parents) each give their turn at its end."""
    assembler = TurnAssembler()
    one = _rag(base=1)
    two = _rag(base=11, start=200, q="q2")
    one[0] = record(1, 99, start=0, end=100, remote=True, attributes=one[0].attributes)
    two[0] = record(11, 99, start=200, end=300, remote=True, attributes=two[0].attributes)
    assert _feed(assembler, one[1:] + two[1:]) == []
    assert assembler.pending_spans == 4
    assert _feed(assembler, [one[0]]) == [("q", "d", "a")]
    assert (assembler.pending_traces, assembler.pending_spans) == (1, 2)
    assert _feed(assembler, [two[0]]) == [("q2", "d", "a")]
    assert (assembler.pending_traces, assembler.pending_spans) == (0, 0)


def test_a_span_replacing_itself_is_counted_once() -> None:
    """Adding the same span twice does not count it twice."""
    assembler = TurnAssembler()
    _, retriever, _ = _rag()
    assembler.add(retriever)
    assembler.add(retriever)
    assert assembler.pending_spans == 1


def test_flush_resolves_pending_traces_as_they_stand() -> None:
    """At shutdown pending traces are resolved (an open root whose output is known counts)."""
    assembler = TurnAssembler()
    root, retriever, model = _rag()
    assembler.add(retriever)
    assembler.add(model)
    assert assembler.flush() == []
    assert assembler.pending_traces == 0
    assembler.add(retriever)
    assembler.add(model)
    assembler.add(record(5, 1, start=50, end=60))
    open_root = record(1, start=0, end=None, attributes=root.attributes)
    assert assembler.turn_for(open_root) is not None
    assert assembler.pending_spans == 3


@pytest.mark.parametrize("name", ["max_traces", "max_spans"])
@pytest.mark.parametrize("value", [0, -1, True, 1.5, "3"])
def test_limits_must_be_positive_ints(name: str, value: object) -> None:
    """A bad limit fails at construction, naming it."""
    with pytest.raises(ValueError, match=f"TurnAssembler: {name} must be an int of at least 1"):
        TurnAssembler(**{name: value})  # type: ignore[arg-type]


def test_limits_of_one_are_accepted() -> None:
    """1 is the smallest limit."""
    assembler = TurnAssembler(max_traces=1, max_spans=1)
    assert assembler.add(record(2, 1)) == []
    assert assembler.pending_spans == 1


def test_oldest_traces_are_evicted_past_max_traces() -> None:
    """Past `max_traces` the oldest pending trace is dropped and counted."""
    assembler = TurnAssembler(max_traces=2)
    for number in (1, 2, 3):
        assert assembler.add(record(2, 1, trace=tid(number))) == []
        assert assembler.add(record(3, 1, trace=tid(number))) == []
    assert (assembler.evicted_traces, assembler.evicted_spans) == (1, 2)
    assert (assembler.pending_traces, assembler.pending_spans) == (2, 4)
    assert assembler.add(record(1, trace=tid(1))) == []
    assert assembler.late_spans == 0


def test_oldest_traces_are_evicted_past_max_spans() -> None:
    """Past `max_spans` pending spans, whole oldest traces go until the count fits."""
    assembler = TurnAssembler(max_spans=3)
    assembler.add(record(2, 1, trace=tid(1)))
    assembler.add(record(3, 1, trace=tid(1)))
    assembler.add(record(2, 1, trace=tid(2)))
    assert assembler.evicted_traces == 0
    assembler.add(record(3, 1, trace=tid(2)))
    assert (assembler.evicted_traces, assembler.evicted_spans) == (1, 2)
    assert assembler.pending_spans == 2


def test_evicted_traces_resolve_when_asked() -> None:
    """With `resolve_evicted`, an evicted trace's turn comes back from the evicting `add`."""
    assembler = TurnAssembler(max_traces=1, resolve_evicted=True)
    root, retriever, model = _rag(tid(1))
    root = record(1, 99, start=0, end=100, remote=False, trace=tid(1), attributes=root.attributes)
    for span in (retriever, model, root):
        assert assembler.add(span) == []
    (turn,) = assembler.add(record(2, 1, trace=tid(2)))
    assert (turn.trace_id, turn.query) == (tid(1), "q")
    assert assembler.evicted_traces == 1
    dropping = TurnAssembler(max_traces=1)
    for span in (retriever, model, root):
        dropping.add(span)
    assert dropping.add(record(2, 1, trace=tid(2))) == []


def test_evicted_traces_drop_their_live_content() -> None:
    """Evicted (not resolved) traces release their hidden text from the store."""
    store = LiveContentStore()
    store.enabled = True
    _, retriever, _ = _rag(tid(1))
    store.put(retriever.key, LiveContent(input="secret"))
    assembler = TurnAssembler(max_traces=1, live_content=store)
    assembler.add(retriever)
    assert len(store) == 1
    assembler.add(record(2, 1, trace=tid(2)))
    assert len(store) == 0


def test_live_content_fills_hidden_text_and_is_released() -> None:
    """Text kept in the store replaces hidden span text, and is removed once the turn is out."""
    store = LiveContentStore()
    store.enabled = True
    root, retriever, model = _rag(q="hidden", a="hidden")
    store.put(root.key, LiveContent(input="real q", output="real a"))
    store.put(retriever.key, LiveContent(documents=(Context(text="real d"),)))
    assembler = TurnAssembler(live_content=store)
    assert _feed(assembler, [root, retriever, model]) == [("real q", "real d", "real a")]
    assert len(store) == 0


def test_turn_for_builds_the_turn_of_an_open_root() -> None:
    """An open root with ended descendants gives its turn, consuming nothing."""
    assembler = TurnAssembler()
    root, retriever, model = _rag()
    assembler.add(retriever)
    assembler.add(model)
    open_root = record(1, start=0, end=None, attributes=root.attributes)
    turn = assembler.turn_for(open_root)
    assert turn is not None and (turn.query, turn.answer) == ("q", "a")
    assert assembler.pending_spans == 2
    (final,) = assembler.add(root)
    assert final.query == "q"


def test_turn_for_refuses_what_cannot_be_a_root() -> None:
    """Model calls, spans without output, unknown traces and non-roots give None."""
    assembler = TurnAssembler()
    root, retriever, model = _rag()
    assert assembler.turn_for(record(1, start=0, end=None, attributes=root.attributes)) is None
    assembler.add(retriever)
    assembler.add(model)
    assert assembler.turn_for(model) is None
    no_output = record(1, start=0, end=None, attributes=oi("CHAIN", **{"input.value": "q"}))
    assert assembler.turn_for(no_output) is None
    no_retrieval = record(7, start=0, end=None, trace=tid(7), attributes=root.attributes)
    assert assembler.turn_for(no_retrieval) is None


def test_turn_for_live_output_makes_a_root() -> None:
    """A span whose output is only in the live store may still be a root."""
    store = LiveContentStore()
    store.enabled = True
    _, retriever, model = _rag()
    hidden = record(1, start=0, end=None, attributes=oi("CHAIN"))
    store.put(hidden.key, LiveContent(input="live q", output="live a"))
    assembler = TurnAssembler(live_content=store)
    assembler.add(retriever)
    assembler.add(model)
    turn = assembler.turn_for(hidden)
    assert turn is not None and (turn.query, turn.answer) == ("live q", "live a")
    other = record(1, start=0, end=None, trace=tid(5), attributes=oi("CHAIN"))
    assert assembler.turn_for(other) is None
    store_without_output = LiveContentStore()
    store_without_output.enabled = True
    store_without_output.put(hidden.key, LiveContent(input="live q"))
    quiet = TurnAssembler(live_content=store_without_output)
    quiet.add(retriever)
    quiet.add(model)
    assert quiet.turn_for(hidden) is None


def test_nested_turn_for_needs_an_answering_chain() -> None:
    """A nested span is a turn only when a model call starts after its retrieval ended."""
    assembler = TurnAssembler()
    server = record(1, start=0, end=None, scope="server")
    chain = record(
        2,
        1,
        start=10,
        end=None,
        scope="chain",
        attributes=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
    )
    retriever = record(
        3, 2, start=20, end=30, scope="chain", attributes=oi("RETRIEVER", **oi_docs("d"))
    )
    early_model = record(4, 2, start=11, end=12, scope="chain", attributes=oi("LLM"))
    assembler.add(retriever)
    assembler.add(early_model)
    assert assembler.turn_for(chain) is None
    assembler.add(record(5, 2, start=30, end=40, scope="chain", attributes=oi("LLM")))
    turn = assembler.turn_for(chain)
    assert turn is not None and turn.span_id == sid(2)
    del server


def test_turn_for_waits_for_an_open_ancestor_of_the_same_scope() -> None:
    """With `start` calls, a chain inside an open span of its own instrumentation waits."""
    chain_attrs = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    outer = record(1, 9, start=0, end=None, scope="x", remote=True)
    middle = record(2, 1, start=1, end=None, scope="y")
    chain = record(3, 2, start=10, end=None, scope="x", attributes=chain_attrs)
    children = [
        record(4, 3, start=20, end=30, scope="x", attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(5, 3, start=30, end=40, scope="x", attributes=oi("LLM")),
    ]
    assembler = TurnAssembler()
    for span in (outer, middle, chain):
        assembler.start(span)
    for span in children:
        assembler.add(span)
    assert assembler.turn_for(chain) is None
    other = TurnAssembler()
    other.start(middle)
    other.start(chain)
    for span in children:
        other.add(span)
    assert other.turn_for(chain) is not None
    remote = TurnAssembler()
    remote.start(record(2, 1, start=1, end=None, scope="x", remote=True))
    remote.start(record(1, start=0, end=None, scope="x"))
    remote_chain = record(3, 2, start=10, end=None, scope="x", remote=True, attributes=chain_attrs)
    for span in children:
        remote.add(span)
    assert remote.turn_for(remote_chain) is not None


def test_started_spans_are_bounded() -> None:
    """`start` remembers at most `max_spans` open spans (the oldest forgotten)."""
    chain_attrs = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    assembler = TurnAssembler(max_spans=2)
    assembler.start(record(1, start=0, end=None, scope="x"))
    assembler.start(record(7, start=0, end=None, scope="z"))
    assembler.start(record(8, start=0, end=None, scope="z"))
    chain = record(3, 1, start=10, end=None, scope="x", attributes=chain_attrs)
    assembler.add(
        record(4, 3, start=20, end=30, scope="x", attributes=oi("RETRIEVER", **oi_docs("d")))
    )
    assembler.add(record(5, 3, start=30, end=40, scope="x", attributes=oi("LLM")))
    assert assembler.turn_for(chain) is not None


def test_no_turn_is_explained_once_per_family_until_a_turn_is_found(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Released traces without a turn are diagnosed and logged per family, until a first turn."""
    assembler = TurnAssembler()
    with caplog.at_level(logging.WARNING, logger="groundwire.assembly"):
        assembler.add(record(1, trace=tid(1), resource={"service.name": "svc"}))
        assembler.add(record(1, trace=tid(2), resource={"service.name": "svc"}))
        _feed(assembler, _rag(tid(3)))
        assembler.add(record(1, trace=tid(4), resource={"service.name": "other"}))
    messages = [r.getMessage() for r in caplog.records if r.name == "groundwire.assembly"]
    assert messages == [
        "groundwire has found no RAG turn yet: 1 trace from service svc: no retrieval span "
        "recognised (looked for openinference.span.kind=RETRIEVER, gen_ai.operation.name="
        "retrieval, gen_ai.operation.name=vector_db_retrieve, traceloop.entity.name="
        "*Retriever.task, mlflow.spanType=RETRIEVER)"
    ]
    assert len(assembler.no_turn) == 2


def test_live_duplicates_are_dropped_and_counted() -> None:
    """The same run from a second instrumentation's trace is dropped live."""
    assembler = TurnAssembler()
    assert len(_feed(assembler, _rag(tid(1), scope="a"))) == 1
    assert _feed(assembler, _rag(tid(2), scope="b")) == []
    assert assembler.duplicate_turns == 1
    assert len(_feed(assembler, _rag(tid(3), scope="b", start=1_000))) == 1


def test_live_traces_reusing_span_ids_are_not_mixed_up() -> None:
    """A span id released in one trace does not make another trace's spans late or nested.

    Regression: released and open spans were remembered by span id alone, so a second trace
    reusing the ids lost its spans as "late" and `turn_for` saw the other trace's open spans.
    """
    assembler = TurnAssembler()
    assert _feed(assembler, _rag(tid(1), "q1", "a1", "d1")) == [("q1", "d1", "a1")]
    assert _feed(assembler, _rag(tid(2), "q2", "a2", "d2")) == [("q2", "d2", "a2")]
    assert assembler.late_spans == 0
    chain_attrs = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    assembler.start(record(1, start=0, end=None, trace=tid(3), scope="x"))
    chain = record(3, 1, start=10, end=None, trace=tid(4), scope="x", attributes=chain_attrs)
    assembler.add(
        record(
            4,
            3,
            start=20,
            end=30,
            trace=tid(4),
            scope="x",
            attributes=oi("RETRIEVER", **oi_docs("d")),
        )
    )
    assembler.add(record(5, 3, start=30, end=40, trace=tid(4), scope="x", attributes=oi("LLM")))
    assert assembler.turn_for(chain) is not None


class _Exploding(Mapping[str, Any]):
    """Attributes whose every lookup fails (a broken custom mapping)."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("lookup failed")

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_a_trace_that_breaks_the_diagnosis_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Attributes that fail on every read lose their trace and its diagnosis, logged at debug."""
    assembler = TurnAssembler()
    broken = SpanRecord(TRACE, sid(1), None, "broken", 0, 1, _Exploding())
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert assembler.add(broken) == []
    diagnosed = [r for r in caplog.records if r.getMessage() == "a trace could not be diagnosed"]
    assert len(diagnosed) == 1
    exc_info = diagnosed[0].exc_info
    assert isinstance(exc_info, tuple) and exc_info[0] is RuntimeError
    assert len(assembler.no_turn) == 0


def test_released_spans_are_remembered_up_to_max_spans() -> None:
    """Exactly `max_spans` released spans are remembered; beyond, the oldest are forgotten."""
    assembler = TurnAssembler(max_spans=3)
    for span in (record(2, 1), record(3, 1), record(1)):
        assembler.add(span)
    assert assembler.add(record(9, 1)) == []
    assert assembler.late_spans == 1
    bigger = TurnAssembler(max_spans=3)
    for span in (record(2, 1), record(3, 1), record(4, 1), record(1)):
        bigger.add(span)
    bigger.add(record(8, 4))
    assert bigger.late_spans == 1
    assert bigger.pending_spans == 0


def test_started_spans_at_the_limit_are_all_kept() -> None:
    """With exactly `max_spans` started spans, the oldest still blocks a nested turn."""
    chain_attrs = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    assembler = TurnAssembler(max_spans=2)
    assembler.start(record(1, start=0, end=None, scope="x"))
    assembler.start(record(7, start=0, end=None, scope="z"))
    chain = record(3, 1, start=10, end=None, scope="x", attributes=chain_attrs)
    assembler.add(record(4, 3, start=20, end=30, scope="x", attributes=RETRIEVER_ATTRS))
    assembler.add(record(5, 3, start=30, end=40, scope="x", attributes=oi("LLM")))
    assert assembler.turn_for(chain) is None


def test_remote_parent_of_a_started_span_is_not_walked() -> None:
    """The walk up open ancestors stops at a span whose parent is remote."""
    chain_attrs = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    assembler = TurnAssembler()
    assembler.start(record(1, start=0, end=None, scope="x"))
    assembler.start(record(2, 1, start=1, end=None, scope="y", remote=True))
    chain = record(3, 2, start=10, end=None, scope="x", attributes=chain_attrs)
    assembler.add(record(4, 3, start=20, end=30, scope="x", attributes=RETRIEVER_ATTRS))
    assembler.add(record(5, 3, start=30, end=40, scope="x", attributes=oi("LLM")))
    assert assembler.turn_for(chain) is not None


def test_open_ancestor_walk_stops_after_a_thousand_steps() -> None:
    """A same-scope ancestor beyond 1,000 open ancestors is not looked for (cycle guard)."""
    chain_attrs = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    assembler = TurnAssembler()
    assembler.start(record(5_000, start=0, end=None, scope="x"))
    parent = 5_000
    for number in range(5_001, 6_001):
        assembler.start(record(number, parent, start=1, end=None, scope="other"))
        parent = number
    chain = record(3, parent, start=10, end=None, scope="x", attributes=chain_attrs)
    assembler.add(record(4, 3, start=20, end=30, scope="x", attributes=RETRIEVER_ATTRS))
    assembler.add(record(5, 3, start=30, end=40, scope="x", attributes=oi("LLM")))
    assert assembler.turn_for(chain) is not None
    cycle = TurnAssembler()
    cycle.start(record(1, 2, start=0, end=None, scope="y"))
    cycle.start(record(2, 1, start=0, end=None, scope="y"))
    looped = record(3, 1, start=10, end=None, scope="x", attributes=chain_attrs)
    cycle.add(record(4, 3, start=20, end=30, scope="x", attributes=RETRIEVER_ATTRS))
    cycle.add(record(5, 3, start=30, end=40, scope="x", attributes=oi("LLM")))
    assert cycle.turn_for(looped) is not None


def test_turn_for_looks_only_below_the_span() -> None:
    """Another pending top of the same trace with its own turn does not hide this one."""
    chain_attrs = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    assembler = TurnAssembler()
    for span in (
        record(2, 1, start=1, end=50, attributes=chain_attrs),
        record(3, 2, start=10, end=20, attributes=RETRIEVER_ATTRS),
        record(4, 2, start=30, end=40, attributes=oi("LLM")),
        record(12, 11, start=110, end=120, attributes=RETRIEVER_ATTRS),
        record(13, 11, start=130, end=140, attributes=oi("LLM")),
    ):
        assembler.add(span)
    request = record(11, 99, start=100, end=None, remote=True, attributes=chain_attrs)
    turn = assembler.turn_for(request)
    assert turn is not None and turn.span_id == sid(11)
    nested = record(20, 4, start=35, end=None, attributes=chain_attrs)
    assert assembler.turn_for(nested) is None


def test_turn_for_reads_the_span_again_when_it_ends() -> None:
    """What `turn_for` read of the open span is forgotten: the ended span's output wins."""
    assembler = TurnAssembler()
    _, retriever, model = _rag()
    assembler.add(retriever)
    assembler.add(model)
    partial = record(
        1,
        start=0,
        end=None,
        attributes=oi("CHAIN", **{"input.value": "q", "output.value": "partial"}),
    )
    turn = assembler.turn_for(partial)
    assert turn is not None and turn.answer == "partial"
    (final,) = assembler.add(
        record(
            1,
            start=0,
            end=100,
            attributes=oi("CHAIN", **{"input.value": "q", "output.value": "final"}),
        )
    )
    assert final.answer == "final"


RETRIEVER_ATTRS = oi("RETRIEVER", **oi_docs("d"))


def test_default_limit_is_a_thousand_pending_traces() -> None:
    """By default the 1,001st pending trace evicts the oldest."""
    assembler = TurnAssembler()
    for number in range(1, 1_001):
        assembler.add(record(2, 1, trace=tid(number)))
    assert assembler.evicted_traces == 0
    assembler.add(record(2, 1, trace=tid(1_001)))
    assert (assembler.evicted_traces, assembler.pending_traces) == (1, 1_000)


def test_evictions_are_counted_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Every evicted trace and its spans are counted; each eviction is logged at debug."""
    assembler = TurnAssembler(max_traces=1)
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assembler.add(record(2, 1, trace=tid(1)))
        assembler.add(record(3, 1, trace=tid(1)))
        assembler.add(record(2, 1, trace=tid(2)))
        assembler.add(record(2, 1, trace=tid(3)))
    assert (assembler.evicted_traces, assembler.evicted_spans) == (2, 3)
    assert [r.getMessage() for r in caplog.records if "evicted" in r.getMessage()] == [
        f"trace {tid(1)} evicted with 2 pending spans",
        f"trace {tid(2)} evicted with 1 pending spans",
    ]


def test_an_ended_ancestor_no_longer_blocks_a_nested_turn() -> None:
    """A started span that has ended is no open ancestor any more."""
    chain_attrs = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    assembler = TurnAssembler()
    ancestor = record(2, 1, start=0, end=None, scope="x")
    assembler.start(ancestor)
    chain = record(3, 2, start=10, end=None, scope="x", attributes=chain_attrs)
    assembler.start(chain)
    assembler.add(record(4, 3, start=20, end=30, scope="x", attributes=RETRIEVER_ATTRS))
    assembler.add(record(5, 3, start=30, end=40, scope="x", attributes=oi("LLM")))
    assert assembler.turn_for(chain) is None
    assembler.add(record(2, 1, start=0, end=45, scope="x"))
    assert assembler.turn_for(chain) is not None
