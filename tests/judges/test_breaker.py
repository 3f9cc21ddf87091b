"""The circuit breaker, alone and in the judge client: a dead judge is noticed once, skipped, and
probed until it answers again; rate limits are not outages."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator

import pytest

import groundwire
from groundwire import RagTurn, semconv
from groundwire._breaker import CLOSED, HALF_OPEN, OPEN, CircuitBreaker
from groundwire.evaluators.groundedness import ResponseGroundedness
from groundwire.judges import JudgeClient, JudgeConfig
from groundwire.judges._client import JUDGE_UNREACHABLE
from groundwire.testing import OpenAIServer, Reply, structured
from tests.judges._helpers import fast_config

TURN = RagTurn(query="Who?", contexts=["Ada wrote the notes."], answer="Ada wrote them.")


class Clock:
    """A hand-driven monotonic clock."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def refusing() -> Iterator[socket.socket]:
    """A loopback socket bound but not listening: every connection to its port is refused, and
    no other process can take the port until the test closes it to serve there."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    yield sock
    sock.close()


def _port(sock: socket.socket) -> int:
    """The socket's bound port."""
    return int(sock.getsockname()[1])


def test_breaker_opens_at_threshold_probes_after_cooldown_and_closes() -> None:
    """Closed -> open after N failures -> refuses -> one probe after the cool-down -> closed."""
    clock = Clock()
    breaker = CircuitBreaker("thing", threshold=3, cooldown_s=10, clock=clock)
    for _ in range(2):
        assert breaker.allow()
        breaker.failure(ConnectionRefusedError("refused"))
    assert breaker.state == CLOSED
    breaker.failure("refused")
    assert breaker.state == OPEN
    assert not breaker.allow() and not breaker.allow()
    clock.now += 10
    assert breaker.allow()  # the probe
    assert breaker.state == HALF_OPEN
    assert not breaker.allow()  # only one probe at a time
    breaker.failure("still refused")
    assert breaker.state == OPEN and not breaker.allow()
    clock.now += 10
    assert breaker.allow()
    breaker.success()
    assert breaker.state == CLOSED and breaker.allow()
    assert (breaker.refused, breaker.opened) == (4, 1)


def test_a_success_resets_the_count_of_failures() -> None:
    """Failures must be consecutive: one answer in between starts the count again."""
    breaker = CircuitBreaker("thing", threshold=2, cooldown_s=1, clock=Clock())
    breaker.failure("x")
    breaker.success()
    breaker.failure("x")
    assert breaker.state == CLOSED


def test_an_outage_is_logged_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    """One warning when the breaker opens, one when it closes; refused calls log nothing."""
    clock = Clock()
    breaker = CircuitBreaker("collector", threshold=1, cooldown_s=5, clock=clock)
    with caplog.at_level(logging.WARNING, logger="groundwire"):
        breaker.failure("refused")
        for _ in range(100):
            breaker.allow()
        clock.now += 5
        breaker.allow()
        breaker.failure("refused")  # a failed probe: no new line
        clock.now += 5
        breaker.allow()
        breaker.success()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    assert "collector is unreachable" in lines[0]
    assert "reachable again" in lines[1] and "100 calls were skipped" in lines[1]


def test_bad_breaker_settings_name_the_setting() -> None:
    """Threshold and cool-down are checked at construction."""
    with pytest.raises(ValueError, match="threshold"):
        CircuitBreaker("x", threshold=0)
    with pytest.raises(ValueError, match="cooldown_s"):
        CircuitBreaker("x", cooldown_s=-1)


def test_a_dead_judge_is_skipped_fast_with_reason_judge_unreachable(
    refusing: socket.socket,
) -> None:
    """40 turns against a closed port finish in seconds: after the breaker opens, every
    groundedness evaluation is `skipped` with reason `judge_unreachable` and makes no call."""
    config = JudgeConfig(
        model="judge-model",
        base_url=f"http://127.0.0.1:{_port(refusing)}/v1",
        api_key="k",
        backoff_base_s=0.2,
        backoff_max_s=2.0,
        max_retries=3,
        cache="off",
    )
    client = JudgeClient(config)
    started = time.monotonic()
    results = groundwire.evaluate_many([TURN] * 40, [ResponseGroundedness(judge=client)])
    elapsed = time.monotonic() - started
    scores = [r["groundedness"] for r in results]
    skipped = [s for s in scores if s.label == semconv.LABEL_SKIPPED]
    assert elapsed < 5.0, elapsed
    assert len(skipped) >= 36, [s.label for s in scores]
    assert all(s.value is None and s.details["skip_reason"] == JUDGE_UNREACHABLE for s in skipped)
    assert client.breaker.state == OPEN
    assert client.breaker.refused >= len(skipped)  # each skipped turn was refused, not sent


def test_the_judge_client_recovers_by_itself_when_the_server_returns(
    refusing: socket.socket,
) -> None:
    """While the server is down, calls are skipped; after the cool-down a probe reaches the
    restarted server and scoring resumes without any action."""
    config = JudgeConfig(
        model="judge-model",
        base_url=f"http://127.0.0.1:{_port(refusing)}/v1",
        api_key="k",
        backoff_base_s=0.01,
        backoff_max_s=0.02,
        max_retries=0,
        cache="off",
    )
    client = JudgeClient(config, breaker=CircuitBreaker("judge", threshold=2, cooldown_s=0.3))
    evaluator = ResponseGroundedness(judge=client)
    down = groundwire.evaluate_many([TURN] * 3, [evaluator])
    assert [r["groundedness"].label for r in down][-1] == semconv.LABEL_SKIPPED
    assert client.breaker.state == OPEN
    port = _port(refusing)
    refusing.close()  # the judge comes back on the same port
    with OpenAIServer(structured({"rating": 2}), port=port):
        time.sleep(0.35)
        groundwire.evaluate_many([TURN], [evaluator])  # one call probes; its sibling may skip
        up = groundwire.evaluate_many([TURN] * 3, [evaluator])
    assert [r["groundedness"].value for r in up] == [1.0, 1.0, 1.0]
    assert client.breaker.state == CLOSED


def test_rate_limits_do_not_open_the_breaker(openai_server: OpenAIServer) -> None:
    """429 with Retry-After is an answer: retried as before, never counted as an outage."""
    client = JudgeClient(
        fast_config(openai_server, max_retries=1),
        breaker=CircuitBreaker("judge", threshold=2, cooldown_s=60),
    )
    limited = Reply.error(429, "slow down", headers={"retry-after-ms": "20"})
    for _ in range(4):
        openai_server.enqueue(limited, structured({"rating": 1}))
    results = groundwire.evaluate_many([TURN] * 2, [ResponseGroundedness(judge=client)])
    assert [r["groundedness"].value for r in results] == [0.5, 0.5]
    assert client.breaker.state == CLOSED and client.breaker.opened == 0
    assert openai_server.request_count > 4  # the 429s were retried
