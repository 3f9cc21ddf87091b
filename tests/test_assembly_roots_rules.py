"""The bookkeeping behind the turn-root rule (groundwire.assembly._roots), piece by piece: how a
child's subtree folds into its parent's summary, when it answers, and the stand-in made for a
parent span that never arrived. The rule end to end is in tests/test_assembly_tree.py."""

from __future__ import annotations

from groundwire.assembly import SpanRecord
from groundwire.assembly._reader import SpanReader
from groundwire.assembly._roots import (
    MISSING_PARENT_NAME,
    _absorb,
    _absorb_into_tool,
    _max,
    _merge,
    _min,
    _missing_parent,
    _Summary,
)
from groundwire.assembly._tree import TraceTree
from tests.assembly_records import oi, oi_docs, record, sid

READER = SpanReader(None)


def _retriever(number: int, start: int, end: int | None, parent: int = 99) -> SpanRecord:
    return record(number, parent, start=start, end=end, attributes=oi("RETRIEVER", **oi_docs("d")))


def _model(number: int, start: int, parent: int = 99) -> SpanRecord:
    return record(number, parent, start=start, end=start + 5, attributes=oi("LLM"))


def test_min_and_max_of_optional_numbers() -> None:
    assert (_min(None, 3), _min(3, None), _min(2, 3), _min(3, 2), _min(None, None)) == (
        3,
        3,
        2,
        2,
        None,
    )
    assert (_max(None, 3), _max(3, None), _max(2, 3), _max(3, 2), _max(None, None)) == (
        3,
        3,
        3,
        3,
        None,
    )


def test_a_child_and_its_subtree_fold_into_the_parent() -> None:
    """Counts add up, first source end is the earliest, last model start the latest; a source
    that is a turn root of its own is not free."""
    into = _Summary(sources=1, first_source_end=50, last_generation_start=40, free_sources=1)
    into.free_first_source_end, into.free_last_generation_start = 50, 40
    below = _Summary(
        sources=2,
        first_source_end=30,
        last_generation_start=70,
        free_sources=1,
        free_first_source_end=35,
        free_last_generation_start=60,
        roots=["r"],
        tool_roots=["t"],
    )
    _merge(READER, into, _retriever(1, 10, 20), below)
    assert (into.sources, into.first_source_end, into.last_generation_start) == (4, 20, 70)
    assert (into.free_sources, into.free_first_source_end, into.free_last_generation_start) == (
        3,
        20,
        60,
    )
    assert (into.roots, into.tool_roots) == (["r"], ["t"])
    rooted = _Summary(roots=[sid(2)])
    _merge(READER, into, _retriever(2, 0, None), rooted)
    assert (into.sources, into.first_source_end, into.free_sources) == (5, 0, 3)
    assert into.free_first_source_end == 20
    _merge(READER, into, _model(3, 90), _Summary())
    assert (into.last_generation_start, into.free_last_generation_start) == (90, 90)
    _merge(READER, into, record(4, 99, start=200, attributes=oi("CHAIN")), _Summary())
    assert (into.sources, into.last_generation_start) == (5, 90)


def test_a_model_call_answers_when_it_starts_at_or_after_a_source_ended() -> None:
    assert _Summary(
        free_sources=1, free_first_source_end=20, free_last_generation_start=20
    ).answers_freely()
    assert not _Summary(
        free_sources=1, free_first_source_end=20, free_last_generation_start=19
    ).answers_freely()
    assert not _Summary(
        free_sources=0, free_first_source_end=20, free_last_generation_start=30
    ).answers_freely()
    assert not _Summary(free_sources=1, free_last_generation_start=30).answers_freely()
    assert not _Summary(free_sources=1, free_first_source_end=20).answers_freely()


def test_absorbing_frees_or_claims_the_subtree() -> None:
    summary = _Summary(
        sources=2, first_source_end=5, last_generation_start=9, roots=["a"], tool_roots=["b"]
    )
    _absorb_into_tool(summary)
    assert (summary.roots, summary.tool_roots) == ([], ["b", "a"])
    assert (
        summary.free_sources,
        summary.free_first_source_end,
        summary.free_last_generation_start,
    ) == (2, 5, 9)
    _absorb(summary, "turn")
    assert (summary.roots, summary.tool_roots, summary.free_sources) == (["turn"], [], 0)
    assert (summary.free_first_source_end, summary.free_last_generation_start) == (None, None)


def test_a_missing_parent_gets_a_stand_in_spanning_its_answering_children() -> None:
    """The stand-in: the missing id, no parent, the earliest start and latest end of the group,
    the first span's trace, resource and scope; the parent's other children are skipped."""
    first = record(
        1,
        99,
        start=10,
        end=20,
        attributes=oi("RETRIEVER", **oi_docs("d")),
        resource={"service.name": "app"},
        scope="scope-a",
    )
    model = record(2, 99, start=30, end=None, attributes=oi("LLM"))
    late = record(3, 99, start=40, end=80, attributes=oi("CHAIN"))
    other = record(4, 99, start=90, end=95, attributes=oi("CHAIN"))
    tree = TraceTree([model, first, late, other])
    group = [(model, _Summary()), (first, _Summary()), (late, _Summary())]
    root = _missing_parent(tree, READER, sid(99), group)
    assert root is not None and root.missing
    stand_in = root.record
    assert (stand_in.span_id, stand_in.parent_span_id, stand_in.name) == (
        sid(99),
        None,
        MISSING_PARENT_NAME,
    )
    assert (stand_in.start_time_ns, stand_in.end_time_ns) == (10, 80)
    assert (stand_in.trace_id, stand_in.resource) == (first.trace_id, {"service.name": "app"})
    assert stand_in.instrumentation_scope == "scope-a"
    assert stand_in.attributes == {}
    assert root.skip == frozenset({sid(4)})
    assert tree.spans[sid(99)] is stand_in
    early_model = record(5, 98, start=0, end=None, attributes=oi("LLM"))
    after = record(6, 98, start=10, end=None, attributes=oi("RETRIEVER", **oi_docs("d")))
    quiet = TraceTree([early_model, after])
    group = [(early_model, _Summary()), (after, _Summary())]
    assert _missing_parent(quiet, READER, sid(98), group) is None
    assert sid(98) not in quiet.spans
