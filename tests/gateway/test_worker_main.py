"""The scoring child's main (`scoring_main`) run in this process at the parent's stop: it does
not take the orphan's way out (the immediate exit that leaves a persistent queue's traces to
the next start), and it keeps the deadline the parent sent, reporting a turn still being
scored when it ran out as not drained. Real parts: gateway config, providers with the result
capture, runner, a registered evaluator that is slow."""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from tests.gateway._traces import openinference_rag_trace, request

from groundwire import RagTurn, Score, get_evaluator, register_evaluator
from groundwire.gateway import GatewayConfig, load_config
from groundwire.gateway._signals import CONTENT_JSON, SIGNALS, decode
from groundwire.gateway._worker import scoring_main

_SLOW_S = 3.0


def _protobuf(trace: list[dict[str, Any]]) -> bytes:
    """The protobuf encoding of an OTLP/JSON request of `trace` (what the intake hands over)."""
    return bytes(decode(SIGNALS["traces"], request(trace), CONTENT_JSON).SerializeToString())


def _config(tmp_path: Path, **flags: Any) -> GatewayConfig:
    """A gateway config with a persistent queue, forwarding to a closed port."""
    return load_config(
        flags={
            "forward": "http://127.0.0.1:9",
            "evaluators": "quoted_spans",
            "queue_dir": str(tmp_path),
            "quiet_period_s": 0.2,
            **flags,
        },
        environ={},
    )


@contextlib.contextmanager
def _as_the_child() -> Iterator[None]:
    """Run the child's main in this process: its signal dispositions and priority are put
    back afterwards (raising a priority back needs root, so the test is skipped without), and
    an `os._exit` (the orphan's way out) raises instead of ending this process with code 0,
    which would pass for success."""
    if os.geteuid() != 0:
        pytest.skip("the child lowers its priority; only root can raise this process's back")
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    nice = os.nice(0)
    exit_ = os._exit

    def tripwire(status: int) -> NoReturn:
        raise AssertionError(f"the child's main called os._exit({status}) in the test process")

    os._exit = tripwire
    try:
        yield
    finally:
        os._exit = exit_
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        os.nice(nice - os.nice(0))


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
    inbox.put((_protobuf(openinference_rag_trace()), 3, time.monotonic(), (4,)))
    inbox.put(("stop", 3.0))
    with _as_the_child():
        scoring_main(_config(tmp_path), inbox, outbox, logging.INFO)
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
    inbox.put((_protobuf(openinference_rag_trace()), 3, time.monotonic(), (4,)))
    inbox.put(("stop", 1.0))
    config = _config(tmp_path, evaluators=_SlowTurn.name, shutdown_timeout_s=10.0)
    with _as_the_child():
        started = time.monotonic()
        scoring_main(config, inbox, outbox, logging.INFO)
        took = time.monotonic() - started
    final = _messages(outbox)[-1]
    assert final["final"] is True and final["drained"] is False
    assert final["turns"]["submitted"] == 1 and final["turns"]["scored"] == 0
    assert took < _SLOW_S
