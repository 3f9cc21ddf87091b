"""The scoring child's main (`scoring_main`) run in this process at the parent's stop: it does
not take the orphan's way out (the immediate exit that leaves a persistent queue's traces to
the next start), and it keeps the deadline the parent sent, reporting a turn still being
scored when it ran out as not drained. Real parts: gateway config, providers with the result
capture, runner, a registered evaluator that is slow."""

from __future__ import annotations

import logging
import queue
import time
from pathlib import Path
from typing import Any

import pytest
from tests.gateway._child import as_the_child, protobuf_request, scoring_config
from tests.gateway._traces import openinference_rag_trace

from groundwire import RagTurn, Score, get_evaluator, register_evaluator
from groundwire.gateway._worker import scoring_main

pytestmark = pytest.mark.timeout(30)  # a loop that never stops fails, rather than hangs

_SLOW_S = 3.0


def _messages(outbox: queue.Queue[Any]) -> list[Any]:
    out = []
    while not outbox.empty():
        out.append(outbox.get())
    return out


def test_at_the_parents_stop_the_child_does_not_leave_as_an_orphan(tmp_path: Path) -> None:
    """Stopped by the parent, the child with a persistent queue scores what it holds and
    sends its final counts; it never takes the orphan's immediate exit (`_as_the_child` turns
    that exit into a failure: it would end this test process with code 0)."""
    inbox: queue.Queue[Any] = queue.Queue()
    outbox: queue.Queue[Any] = queue.Queue()
    inbox.put((protobuf_request(openinference_rag_trace()), 3, time.monotonic(), (4,)))
    inbox.put(("stop", 3.0))
    with as_the_child():
        scoring_main(scoring_config(queue_dir=str(tmp_path)), inbox, outbox, logging.INFO)
    final = _messages(outbox)[-1]
    assert (final["final"], final["drained"], final["open_traces"]) == (True, True, 0)
    assert final["turns"]["scored"] == 1


class _SlowTurn:
    """quoted_spans, taking `_SLOW_S` per turn (a judge that is slow to answer)."""

    name = "gw_slow_turn"

    def __init__(self) -> None:
        self._inner: Any = get_evaluator("quoted_spans")

    def evaluate(self, turn: RagTurn) -> Score:
        time.sleep(_SLOW_S)
        score: Score = self._inner.evaluate(turn)
        return score


def test_the_child_keeps_the_deadline_the_parent_sent(tmp_path: Path) -> None:
    """The stop's deadline (1 s) is the child's, not the config's shutdown timeout (10 s): a
    turn still being scored when it runs out is reported as not drained, and the child ends
    before the slow turn would have."""
    register_evaluator(_SlowTurn.name, _SlowTurn, replace=True)
    inbox: queue.Queue[Any] = queue.Queue()
    outbox: queue.Queue[Any] = queue.Queue()
    inbox.put((protobuf_request(openinference_rag_trace()), 3, time.monotonic(), (4,)))
    inbox.put(("stop", 1.0))
    config = scoring_config(
        queue_dir=str(tmp_path), evaluators=_SlowTurn.name, shutdown_timeout_s=10.0
    )
    with as_the_child():
        started = time.monotonic()
        scoring_main(config, inbox, outbox, logging.INFO)
        took = time.monotonic() - started
    final = _messages(outbox)[-1]
    assert final["final"] is True and final["drained"] is False
    assert final["turns"]["submitted"] == 1 and final["turns"]["scored"] == 0
    assert took < _SLOW_S
