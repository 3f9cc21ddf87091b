"""The scoring child's loop (`_serve`) keeps its rhythm while idle: counts every half second
(not at every tick), and the parent check and scored-trace reports on the ticks between. Real
parts: gateway config, providers with the result capture, runner, trace window; in this
process."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.gateway._child import scoring_config

from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._results import ResultCapture
from groundwire.gateway._scoring import ScoredReporter
from groundwire.gateway._telemetry import build_providers
from groundwire.gateway._worker import _build_scorer, _serve

pytestmark = pytest.mark.timeout(30)  # a loop that never stops fails, rather than hangs


@pytest.fixture
def built(tmp_path: Path) -> Iterator[tuple[Any, GatewayMetrics]]:
    """A scorer as the child builds it, and its metrics; shut down after the test."""
    config = scoring_config(queue_dir=str(tmp_path))
    providers = build_providers(config, prometheus=False, capture=ResultCapture())
    metrics = GatewayMetrics(None)
    scorer = _build_scorer(config, metrics, providers)
    yield scorer, metrics
    scorer.shutdown(5.0)
    providers.shutdown(1.0)


def test_an_idle_loop_reports_counts_every_half_second_and_checks_its_parent_between(
    built: tuple[Any, GatewayMetrics],
) -> None:
    """Over 1.2 s with nothing fed the loop sends its counts at the start and every half
    second (3), and asks whether the parent lives at about every tick (0.1 s) in between."""
    scorer, metrics = built
    inbox: queue.Queue[Any] = queue.Queue()
    outbox: queue.Queue[Any] = queue.Queue()
    checks: list[float] = []

    def parent_alive() -> bool:
        checks.append(time.monotonic())
        return True

    reporter = ScoredReporter(lambda: None, lambda done, ids, results: None)
    loop = threading.Thread(
        target=_serve, args=(scorer, metrics, inbox, outbox, reporter, parent_alive), daemon=True
    )
    loop.start()
    time.sleep(1.2)
    inbox.put(("stop", 1.0))
    loop.join(10)
    reporter.close(1.0)
    assert 2 <= outbox.qsize() <= 3  # at 0, 0.5 and 1.0 s (the last late under load)
    assert 4 <= len(checks) <= 14


def test_a_busy_loop_checks_its_parent_every_50_ms_not_at_every_request(
    built: tuple[Any, GatewayMetrics],
) -> None:
    """Requests arriving faster than every 50 ms are taken one a step, but the parent check
    (and the report of scored traces with it) still comes at most every 50 ms: 300 requests
    taken in a burst ask far fewer than 300 times."""
    scorer, metrics = built
    inbox: queue.Queue[Any] = queue.Queue()
    outbox: queue.Queue[Any] = queue.Queue()
    checks: list[float] = []

    def parent_alive() -> bool:
        checks.append(time.monotonic())
        return True

    for _ in range(300):
        inbox.put((b"", 0, time.monotonic(), ()))  # an empty traces request: nothing to group
    inbox.put(("stop", 1.0))
    reporter = ScoredReporter(lambda: None, lambda done, ids, results: None)
    started = time.monotonic()
    _serve(scorer, metrics, inbox, outbox, reporter, parent_alive)
    took = time.monotonic() - started
    reporter.close(1.0)
    assert inbox.empty()
    assert 1 <= len(checks) <= took / 0.05 + 2 < 300
