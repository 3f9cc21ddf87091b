"""The turn-root rule (docs/assembly.md, "Turns") and the trace tree under it, from hand-built
records: candidates, answering, wrappers, replaced and moved spans.
"""

from __future__ import annotations

from groundwire.assembly import turns_from_spans
from groundwire.assembly._reader import SpanReader
from groundwire.assembly._tree import TraceTree
from tests.assembly_records import oi, oi_docs, record, sid

CHAIN = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
RETRIEVER = oi("RETRIEVER", **oi_docs("d"))


def _roots(records: list[object]) -> list[str]:
    return [turn.span_id or "" for turn in turns_from_spans(records)]


def test_tops_are_roots_orphans_and_self_parents_by_start() -> None:
    """Spans whose parent is absent (or themselves) are tops, ordered by start time."""
    tree = TraceTree(
        [
            record(1, start=30),
            record(2, 9, start=10),
            record(3, 3, start=20),
            record(4, 1, start=5),
        ]
    )
    assert tree.tops() == [sid(2), sid(3), sid(1)]
    assert [r.span_id for r in tree.subtree(sid(3))] == [sid(3)]
    assert len(tree) == 4


def test_subtree_lists_parents_before_children_in_order() -> None:
    """Depth first, children in the order they were added."""
    tree = TraceTree([record(1), record(2, 1), record(3, 1), record(4, 2), record(5, 3)])
    assert [r.span_id for r in tree.subtree(sid(1))] == [sid(n) for n in (1, 2, 4, 3, 5)]
    assert list(tree.subtree(sid(9))) == []


def test_replacing_a_span_moves_it_to_its_new_parent() -> None:
    """A span added again with another parent leaves the old parent's children."""
    tree = TraceTree([record(1), record(2), record(3, 1)])
    tree.add(record(3, 2))
    assert [r.span_id for r in tree.subtree(sid(1))] == [sid(1)]
    assert [r.span_id for r in tree.subtree(sid(2))] == [sid(2), sid(3)]
    tree.add(record(3, 2, end=50))
    assert [r.end_time_ns for r in tree.subtree(sid(2))] == [1, 50]
    tree.add(record(3))
    assert [r.span_id for r in tree.subtree(sid(2))] == [sid(2)]
    assert tree.tops() == [sid(1), sid(2), sid(3)]


def test_split_moves_a_subtree_out() -> None:
    """`split` returns the subtree as its own tree and forgets it here."""
    tree = TraceTree([record(1), record(2, 1), record(3, 2), record(4, 1)])
    moved = tree.split(sid(2))
    assert sorted(moved.spans) == [sid(2), sid(3)]
    assert [r.span_id for r in moved.subtree(sid(2))] == [sid(2), sid(3)]
    assert sorted(tree.spans) == [sid(1), sid(4)]
    assert [r.span_id for r in tree.subtree(sid(1))] == [sid(1), sid(4)]
    tree.split(sid(4))
    assert tree.children == {}
    assert len(tree.split(sid(9))) == 0


def test_answering_needs_a_model_call_at_or_after_a_retrieval_end() -> None:
    """Answering: a descendant model call starts at or after the first retriever's end."""
    for model_start, expected in ((20, True), (19, False), (35, True)):
        tree = TraceTree(
            [
                record(1, start=0, end=100, attributes=CHAIN),
                record(2, 1, start=10, end=20, attributes=RETRIEVER),
                record(3, 1, start=25, end=30, attributes=RETRIEVER),
                record(4, 1, start=model_start, end=99, attributes=oi("LLM")),
            ]
        )
        assert tree.answering(SpanReader(None), sid(1)) is expected
    open_retriever = TraceTree(
        [
            record(1, start=0, end=100, attributes=CHAIN),
            record(2, 1, start=10, end=None, attributes=RETRIEVER),
            record(3, 1, start=10, end=20, attributes=oi("LLM")),
        ]
    )
    assert open_retriever.answering(SpanReader(None), sid(1))
    only_retriever = TraceTree([record(1, attributes=CHAIN), record(2, 1, attributes=RETRIEVER)])
    assert not only_retriever.answering(SpanReader(None), sid(1))
    later_first = TraceTree(
        [
            record(1, start=0, end=100, attributes=CHAIN),
            record(2, 1, start=10, end=20, attributes=RETRIEVER),
            record(3, 1, start=30, end=40, attributes=oi("LLM")),
            record(4, 1, start=15, end=16, attributes=oi("LLM")),
        ]
    )
    assert later_first.answering(SpanReader(None), sid(1))
    self_only = TraceTree([record(1, attributes=RETRIEVER)])
    assert not self_only.answering(SpanReader(None), sid(1))


def _episode(base: int, parent: int, start: int, model_at: int | None) -> list[object]:
    spans: list[object] = [
        record(base, parent, start=start, end=start + 50, attributes=CHAIN),
        record(base + 1, base, start=start + 10, end=start + 20, attributes=RETRIEVER),
    ]
    if model_at is not None:
        spans.append(
            record(base + 2, base, start=start + model_at, end=start + 45, attributes=oi("LLM"))
        )
    return spans


def test_two_answering_chains_under_a_candidate_are_two_turns() -> None:
    """A wrapper with two answering roots below defers to them."""
    agent = record(1, start=0, end=500, attributes=CHAIN)
    spans = [agent, *_episode(10, 1, 100, 30), *_episode(20, 1, 200, 20)]
    assert _roots(spans) == [sid(10), sid(20)]


def test_one_answering_chain_is_absorbed_by_its_candidate_parent() -> None:
    """One answering root below (the other not answering): the outer candidate is the turn."""
    agent = record(1, start=0, end=500, attributes=CHAIN)
    spans = [agent, *_episode(10, 1, 100, 30), *_episode(20, 1, 200, 15)]
    assert _roots(spans) == [sid(1)]
    without_model = [agent, *_episode(10, 1, 100, 30), *_episode(20, 1, 200, None)]
    assert _roots(without_model) == [sid(1)]


def test_answering_chains_under_a_plain_span_pass_up() -> None:
    """A span that is no candidate (no input) passes the roots below it up unchanged."""
    server = record(1, start=0, end=500, attributes=oi("CHAIN", **{"output.value": "x"}))
    spans = [server, *_episode(10, 1, 100, 30), *_episode(20, 1, 200, None)]
    assert _roots(spans) == [sid(10), sid(20)]


def test_candidates_exclude_model_retriever_and_embedding_spans() -> None:
    """A span of another role with input and output is no candidate."""
    for kind in ("LLM", "RERANKER", "EMBEDDING", "RETRIEVER"):
        root = record(
            1, start=0, end=100, attributes=oi(kind, **{"input.value": "q", "output.value": "a"})
        )
        spans = [root, record(2, 1, start=10, end=20, attributes=RETRIEVER)]
        assert _roots(spans) == [], kind


def test_streamed_candidate_counts_as_answering_root() -> None:
    """A stream placeholder output makes a candidate (its answer comes from the model)."""
    root = oi("CHAIN", **{"input.value": "q", "output.value": "<generator object g at 0x1>"})
    spans = [
        record(1, start=0, end=100, attributes=root),
        record(2, 1, start=10, end=20, attributes=RETRIEVER),
        record(3, 1, start=30, end=40, attributes=oi("LLM", **{"output.value": "streamed"})),
    ]
    (turn,) = turns_from_spans(spans)
    assert (turn.span_id, turn.answer) == (sid(1), "streamed")


def test_candidate_needs_an_input() -> None:
    """Output and retriever without any input: no candidate, no turn."""
    spans = [
        record(1, start=0, end=100, attributes=oi("CHAIN", **{"output.value": "a"})),
        record(2, 1, start=10, end=20, attributes=RETRIEVER),
    ]
    assert _roots(spans) == []


def test_retrievers_deep_below_count_for_the_candidate() -> None:
    """Retrievers and model calls several levels down are summed into their ancestors."""
    spans = [
        record(1, start=0, end=100, attributes=CHAIN),
        record(2, 1, start=1, end=99),
        record(3, 2, start=2, end=98),
        record(4, 3, start=10, end=20, attributes=RETRIEVER),
        record(5, 2, start=30, end=40, attributes=oi("LLM")),
    ]
    assert _roots(spans) == [sid(1)]


def test_a_step_with_input_but_no_output_is_passed_over() -> None:
    """A span with an input and no output at all is no candidate; its parent is the root."""
    spans = [
        record(1, start=0, end=100, attributes=CHAIN),
        record(2, 1, start=1, end=99, attributes=oi("CHAIN", **{"input.value": "inner"})),
        record(3, 2, start=10, end=20, attributes=RETRIEVER),
        record(4, 2, start=30, end=40, attributes=oi("LLM")),
    ]
    assert _roots(spans) == [sid(1)]


def test_split_of_a_span_that_is_its_own_parent() -> None:
    """A self-parented span (a corrupt file) splits out alone without error."""
    tree = TraceTree([record(1, 1), record(2)])
    moved = tree.split(sid(1))
    assert sorted(moved.spans) == [sid(1)]
    assert sorted(tree.spans) == [sid(2)]
