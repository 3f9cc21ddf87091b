"""One assembly pass over one trace's tree (groundwire.assembly._pass): the whole tree, or only
the subtree under `top` (what the live assembler asks for a turn that completed inside a longer
trace), turns by start time."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from groundwire.assembly import SpanRecord
from groundwire.assembly._pass import assemble_tree, record_of
from groundwire.assembly._reader import SpanReader
from groundwire.assembly._tree import TraceTree
from tests.assembly_records import oi, oi_docs, rag_trace, record, sid


def _turn(base: int, start: int, query: str) -> list[SpanRecord]:
    spans = rag_trace(
        root=oi("CHAIN", **{"input.value": query, "output.value": f"answer to {query}"}),
        retriever=oi("RETRIEVER", **oi_docs("a document")),
        model=oi("LLM"),
        base=base,
        start=start,
    )
    spans[0] = replace(spans[0], parent_span_id=sid(100))
    return spans


def _tree() -> TraceTree:
    """A session span (not a turn) over two turns, the later one listed first."""
    session = record(100, start=0, end=1000, attributes=oi("AGENT"), name="session")
    return TraceTree([session, *_turn(10, 500, "second"), *_turn(1, 100, "first")])


def test_the_whole_tree_gives_every_turn_by_start_time() -> None:
    turns = assemble_tree(_tree(), SpanReader(None))
    assert [t.query for t in turns] == ["first", "second"]


def test_top_limits_the_pass_to_its_subtree_and_explains_each_root() -> None:
    notes: list[dict[str, object]] = []
    turns = assemble_tree(_tree(), SpanReader(None), top=sid(10), explain=notes)
    assert [t.query for t in turns] == ["second"]
    assert [n["root"] for n in notes] == [sid(10)]
    assert notes[0]["turn"] is turns[0]


def test_record_of_refuses_what_is_not_a_span() -> None:
    span = record(1)
    assert record_of(span) is span
    with pytest.raises(TypeError, match="expects ReadableSpan or SpanRecord objects, got dict"):
        record_of({"span_id": "1"})


def test_a_trace_that_breaks_the_pass_is_skipped_and_logged_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tree whose children name a span it does not hold (no reader builds one) loses that
    trace only: no turn, one debug line with the traceback."""
    tree = _tree()
    tree.children[sid(100)].append("0000000000000bad")
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert assemble_tree(tree, SpanReader(None)) == []
    (line,) = [r for r in caplog.records if r.name == "groundwire.assembly"]
    assert line.getMessage() == "a trace could not be assembled; skipped"
    assert line.levelno == logging.DEBUG and line.exc_info is not None
