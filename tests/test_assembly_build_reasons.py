"""Why `build_turn` makes no turn (docs/assembly.md, "Answer", "Query"): the debug log line naming
the root span and the `inspect` reason, and which spans may lend a root their answer or query;
and the replay order of document steps that start together."""

from __future__ import annotations

import logging

import pytest

from groundwire.assembly import SpanRecord, explain_traces, turns_from_spans
from tests.assembly_records import oi, oi_docs, record, sid


def _reason(records: list[SpanRecord]) -> str | None:
    (report,) = explain_traces(records)
    (turn,) = report.turns
    return turn.reason


def _debug_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "groundwire.assembly" and r.levelno == logging.DEBUG
    ]


def test_a_streamed_root_without_a_model_answer_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A streamed root whose model calls recorded no output makes no turn; the debug line names
    the root span and says why."""
    root = oi("CHAIN", **{"input.value": "q", "output.value": "<generator object x at 0x1>"})
    records = [
        record(1, start=0, end=100, attributes=root),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(3, 1, start=30, end=40, attributes=oi("LLM")),
    ]
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert turns_from_spans(records) == []
    assert f"span {sid(1)}: turn root has no answer; no turn" in _debug_lines(caplog)
    assert _reason(records) == "the turn root has no answer in its output"


def test_a_root_without_a_query_is_logged_and_does_not_borrow_a_model_input(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No query in the root or any retriever makes no turn even when a model call's input holds
    text: only retrievers lend the root their query. The debug line names the root span."""
    records = [
        record(
            1,
            start=0,
            end=100,
            attributes=oi("CHAIN", **{"input.value": '{"a": 1, "b": 2}', "output.value": "a"}),
        ),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(3, 1, start=30, end=40, attributes=oi("LLM", **{"input.value": "model input"})),
        record(4, 1, start=50, end=60, attributes=oi("CHAIN", **{"input.value": "chain input"})),
    ]
    with caplog.at_level(logging.DEBUG, logger="groundwire.assembly"):
        assert turns_from_spans(records) == []
    assert f"span {sid(1)}: no query in the root or its retrievers; no turn" in _debug_lines(caplog)
    assert _reason(records) == "no query in the turn root's input, its retrievers' or model calls'"


def test_steps_starting_together_replay_shortest_first_whatever_their_order_in_the_file() -> None:
    """Two retrievals with the same start replay by end time, also when the longer one comes
    first in the records (and so first in the tree)."""
    root = oi("CHAIN", **{"input.value": "q", "output.value": "a"})
    records = [
        record(1, start=0, end=100, attributes=root),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("short"))),
        record(3, 1, start=10, end=30, attributes=oi("RETRIEVER", **oi_docs("long"))),
        record(4, 1, start=40, end=50, attributes=oi("LLM")),
    ]
    (turn,) = turns_from_spans(records)
    assert turn.context_texts == ["short", "long"]
    (turn,) = turns_from_spans([records[0], records[2], records[1], records[3]])
    assert turn.context_texts == ["short", "long"]
