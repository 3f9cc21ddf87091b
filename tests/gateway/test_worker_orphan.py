"""The scoring child's work (`score_until_stopped`) in this process when its gateway dies
without stopping it: the parent check is backed by a real process that the test kills. With a
persistent queue the child gives up at once (the next start scores the held traces from the
queue); without one it scores what it holds within the config's shutdown timeout and exports
the results, sending no final counts (nobody reads them). Also the child's log format, which
only `scoring_main` sets. Real parts: gateway config, providers (the result capture, or a real
downstream), runner, trace window."""

from __future__ import annotations

import logging
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.gateway._child import as_the_child, protobuf_request, scoring_config
from tests.gateway._traces import openinference_rag_trace
from tests.gateway.conftest import RawDownstream

from groundwire.gateway._worker import score_until_stopped, scoring_main

pytestmark = pytest.mark.timeout(30)  # a loop that never stops fails, rather than hangs

_GONE = "the gateway process is gone; the scoring process stops"


@pytest.fixture
def parent() -> Iterator[subprocess.Popen[bytes]]:
    """A real process playing the gateway: alive until the test kills it."""
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def kept() -> RawDownstream:
    """A real receiver never stopped: the orphan that gives up leaves its providers running
    (as the process exit would), and their metric exports, to the end of this process, must
    find a receiver rather than log failures into other tests."""
    return RawDownstream().start()


def _until(check: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + 30.0
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def _orphan(config: Any, parent: subprocess.Popen[bytes]) -> tuple[list[bool], list[Any], float]:
    """Feed one trace held open (long quiet period), kill the parent once the child took it;
    what `score_until_stopped` returned, the messages it sent and how long it took after."""
    inbox: queue.Queue[Any] = queue.Queue()
    outbox: queue.Queue[Any] = queue.Queue()
    inbox.put((protobuf_request(openinference_rag_trace()), 3, time.monotonic(), (4,)))
    returned: list[bool] = []
    loop = threading.Thread(
        target=lambda: returned.append(
            score_until_stopped(config, inbox, outbox, (), lambda: parent.poll() is None)
        )
    )
    loop.start()
    _until(lambda: not outbox.empty(), "the child reports its first counts")
    _until(lambda: inbox.empty(), "the child takes the request")
    parent.kill()
    parent.wait()
    killed = time.monotonic()
    loop.join(15.0)
    took = time.monotonic() - killed
    messages = []
    while not outbox.empty():
        messages.append(outbox.get())
    return returned, messages, took


def test_an_orphan_with_a_persistent_queue_leaves_its_traces_to_the_next_start(
    tmp_path: Path,
    kept: RawDownstream,
    parent: subprocess.Popen[bytes],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The gateway killed, the child notices within its next report interval, says so, and
    returns False at once (its caller exits): the open trace is not scored here and no final
    counts are sent. (Its runner and providers are left running, as the exit would leave
    them: their metrics go to a receiver kept to the end.)"""
    caplog.set_level(logging.WARNING, logger="groundwire.gateway")
    config = scoring_config(forward=kept.endpoint, queue_dir=str(tmp_path), quiet_period_s=60.0)
    returned, messages, took = _orphan(config, parent)
    assert returned == [False]
    assert took < 1.0
    assert [m.get("final") for m in messages] == [False] * len(messages)
    assert not [m for m in messages if "scored" in m]
    assert [r.getMessage() for r in caplog.records if r.name == "groundwire.gateway"] == [
        _GONE,
        "the open traces are left to the next start (persistent queue)",
    ]


def test_an_orphan_without_a_queue_scores_what_it_holds_and_exports_it(
    downstream: RawDownstream,
    parent: subprocess.Popen[bytes],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without a persistent queue the orphan scores its open trace (within the config's
    shutdown timeout), exports the result downstream and returns True, sending no final
    counts (nobody reads them)."""
    caplog.set_level(logging.WARNING, logger="groundwire.gateway")
    config = scoring_config(
        forward=downstream.endpoint, quiet_period_s=60.0, shutdown_timeout_s=3.0
    )
    returned, messages, took = _orphan(config, parent)
    assert returned == [True]
    assert took < 3.0
    assert not [m for m in messages if m.get("final")]
    (report,) = [m["scored"] for m in messages if "scored" in m]
    assert report[0] == [4] and len(report[1]) == 1 and report[2] == []
    names = [span.name for span in downstream.spans()]
    assert names and all(span.trace_id == report[1][0] for span in downstream.spans())
    assert [r.getMessage() for r in caplog.records if r.name == "groundwire.gateway"] == [_GONE]


def test_the_child_logs_with_time_level_and_logger(tmp_path: Path) -> None:
    """The child's main sets its log lines as `time level logger: message` at the level the
    parent passed (run here with the root logger's handlers set aside, as in a fresh child)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    inbox: queue.Queue[Any] = queue.Queue()
    inbox.put(("stop", 1.0))
    root.handlers = []
    try:
        with as_the_child():
            scoring_main(scoring_config(queue_dir=str(tmp_path)), inbox, queue.Queue(), 15)
        (handler,) = root.handlers
        child_level = root.level
    finally:
        root.handlers = handlers
        root.setLevel(level)
    assert child_level == 15
    record = logging.LogRecord("groundwire.gateway", logging.WARNING, "", 0, "gone", None, None)
    line = handler.format(record)
    assert re.fullmatch(
        r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} WARNING groundwire.gateway: gone", line
    )
