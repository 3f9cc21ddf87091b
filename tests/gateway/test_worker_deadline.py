"""How the scoring child spends the deadline its stop carries (`score_until_stopped`, in this
process): the runner gets the deadline less half a second (never less than nothing) for the
turns in flight. Told by whether a turn of known length finishes in time (drained) rather than
by the clock, which a loaded machine stretches. Real parts: gateway config, providers
exporting to a real receiver, runner, a registered evaluator that takes the time it is given."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.gateway._child import protobuf_request, scoring_config
from tests.gateway._traces import openinference_rag_trace
from tests.gateway.conftest import RawDownstream

from groundwire import RagTurn, Score, get_evaluator, register_evaluator
from groundwire.gateway._worker import score_until_stopped

pytestmark = pytest.mark.timeout(30)  # a loop that never stops fails, rather than hangs


class _Sleepy:
    """quoted_spans, taking `seconds` per turn (a judge that is slow to answer)."""

    name = "gw_sleepy"

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._inner: Any = get_evaluator("quoted_spans")

    def evaluate(self, turn: RagTurn) -> Score:
        time.sleep(self._seconds)
        score: Score = self._inner.evaluate(turn)
        return score


@pytest.fixture(scope="module")
def receiver() -> Iterator[RawDownstream]:
    """A real downstream for the child's metrics."""
    server = RawDownstream().start()
    yield server
    server.stop()


def _drained(tmp_path: Path, receiver: RawDownstream, deadline_s: float, turn_s: float) -> bool:
    """Feed one trace whose turn takes `turn_s`, then the stop with `deadline_s`: whether the
    child's final counts say the runner drained."""
    register_evaluator(_Sleepy.name, _Sleepy, replace=True)
    config = scoring_config(
        forward=receiver.endpoint,
        queue_dir=str(tmp_path),
        evaluators=_Sleepy.name,
        evaluator_options={_Sleepy.name: {"seconds": turn_s}},
    )
    inbox: queue.Queue[Any] = queue.Queue()
    outbox: queue.Queue[Any] = queue.Queue()
    inbox.put((protobuf_request(openinference_rag_trace()), 3, time.monotonic(), (4,)))
    inbox.put(("stop", deadline_s))
    assert score_until_stopped(config, inbox, outbox, (), lambda: True) is True
    messages = []
    while not outbox.empty():
        messages.append(outbox.get())
    final = messages[-1]
    assert final["final"] is True and final["turns"]["submitted"] == 1
    return bool(final["drained"])


def test_a_turn_shorter_than_the_deadline_less_half_a_second_is_waited_for(
    tmp_path: Path, receiver: RawDownstream
) -> None:
    """Given 2 s, the runner has 1.5 s: a turn of 1 s finishes."""
    assert _drained(tmp_path, receiver, 2.0, 1.0) is True


def test_a_turn_longer_than_the_deadline_less_half_a_second_is_not(
    tmp_path: Path, receiver: RawDownstream
) -> None:
    """Given 2 s, the runner has 1.5 s: a turn of 2 s is cut (not drained)."""
    assert _drained(tmp_path, receiver, 2.0, 2.0) is False


def test_a_child_given_little_time_gives_the_runner_almost_none(
    tmp_path: Path, receiver: RawDownstream
) -> None:
    """Given 0.6 s (about the least a stop carries), the runner has 0.1 s: a turn of half a
    second is cut."""
    assert _drained(tmp_path, receiver, 0.6, 0.5) is False
