"""Starting the scoring child never blocks on it: a restart passes the trace ids scored before
(about 200,000), far more than a pipe holds, and a child that dies before reading its start
arguments must not leave `ScoringProcess()` waiting forever on a write nobody reads."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.gateway import _dies_at_start, _stand_in_child
from tests.gateway._child import scoring_config

from groundwire.gateway import _worker
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._worker import ScoringProcess

_IDS = 200_000
"""A restart's scored trace ids: about 7 MB pickled, a hundred times a pipe's 64 KiB."""


def test_a_child_dead_before_its_start_arguments_does_not_block_the_start() -> None:
    """With 200,000 scored ids and a child that dies at once, the handle is back within
    seconds (a guard thread, so a hang fails the test instead of the suite), notices the dead
    child, counts what is fed as not scored and says its shutdown was not clean."""
    metrics = GatewayMetrics(None)
    scored = [f"{i:032x}" for i in range(_IDS)]
    made: list[Any] = []

    def start() -> None:
        made.append(
            ScoringProcess(scoring_config(), metrics, scored=scored, main=_dies_at_start.main)
        )

    guard = threading.Thread(target=start, name="start-guard", daemon=True)
    started = time.monotonic()
    guard.start()
    guard.join(20.0)
    assert not guard.is_alive(), "ScoringProcess() blocked on a child that died at start"
    assert time.monotonic() - started < 20.0
    (process,) = made
    deadline = time.monotonic() + 10.0
    while process.alive and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.alive is False
    assert process.shutdown(2.0) is False


def test_a_live_child_reads_every_scored_id_sent_after_the_start() -> None:
    """The 200,000 ids reach a live child whole (the stand-in child reports them at start)."""
    calls: list[tuple[Any, ...]] = []
    scored = [f"{i:032x}" for i in range(_IDS)]
    process = ScoringProcess(
        scoring_config(),
        GatewayMetrics(None),
        scored=reversed(scored),
        on_scored=lambda *report: calls.append(report),
        main=_stand_in_child.main,
    )
    try:
        deadline = time.monotonic() + 30.0
        while not calls and time.monotonic() < deadline:
            time.sleep(0.01)
        assert calls and calls[0][1] == scored
    finally:
        assert process.shutdown(5.0) is True


def test_the_child_gives_up_on_ids_the_parent_never_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child whose parent sent no ids (killed right after the start) does not wait for them
    forever: reading them ends with `queue.Empty` after `_START_S` (a guard thread, so a read
    that waits for good fails the test instead of hanging it)."""
    monkeypatch.setattr(_worker, "_START_S", 0.05)
    ended: list[str] = []

    def read() -> None:
        try:
            list(_worker._ScoredIds(queue.Queue()))
        except queue.Empty:
            ended.append("empty")

    guard = threading.Thread(target=read, name="read-guard", daemon=True)
    guard.start()
    guard.join(5.0)
    assert ended == ["empty"]


_EXIT_AFTER_A_DEAD_CHILD = """
import sys
from tests.gateway._child import scoring_config
from tests.gateway._stand_in_child import command, main
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._worker import ScoringProcess

process = ScoringProcess(scoring_config(), GatewayMetrics(None), main=main)
process.feed(command(pause=0.5), 1)
process.feed(command(exit=3), 1)
process.feed(b"x" * 1_000_000, 1)  # never read: the child exits first
print("stopped cleanly:", process.shutdown(2.0), flush=True)
"""


def test_a_process_whose_child_died_with_requests_unread_still_exits() -> None:
    """A request the dead child never read (more than a pipe holds) does not hold this process's
    exit: the gateway exits after its shutdown instead of waiting for good on the inbox."""
    done = subprocess.run(
        [sys.executable, "-c", _EXIT_AFTER_A_DEAD_CHILD],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stopped cleanly: False" in done.stdout
