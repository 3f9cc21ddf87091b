"""Retryable refusals from a real downstream: 503 with Retry-After, then 429, then accepted.

These are the answers the Collector's memory limiter gives under pressure. Every span the gateway
answered 200 for must arrive downstream exactly once: none lost to a refusal taken as final, none
doubled by a retry of a request that was already delivered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.gateway._traces import protobuf_request
from tests.gateway.conftest import GatewayProcess, RawDownstream

pytestmark = pytest.mark.slow  # real `groundwire serve` processes

_REQUESTS = 36
_SPANS_PER_REQUEST = 10


def _post(url: str, body: bytes) -> int:
    import urllib.request

    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/x-protobuf"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)


@pytest.mark.parametrize("queue", [False, True], ids=["memory", "queue-dir"])
def test_503_with_retry_after_then_429_are_retried_and_every_span_arrives_once(
    queue: bool,
    downstream: RawDownstream,
    run_gateway: Callable[..., GatewayProcess],
    tmp_path: Path,
) -> None:
    """The first 4 attempts get 503 + Retry-After: 1, the next 3 get 429; then the downstream
    accepts: all 360 spans arrive, each exactly once."""
    downstream.script = [(503, "1")] * 4 + [(429, None)] * 3
    args = ["--forward", downstream.endpoint]
    if queue:
        args += ["--queue-dir", str(tmp_path / "queue")]
    gateway = run_gateway(
        *args,
        env={"GROUNDWIRE_GATEWAY_RETRY_INITIAL_S": "0.05", "GROUNDWIRE_GATEWAY_RETRY_MAX_S": "0.2"},
    )
    for index in range(_REQUESTS):
        assert _post(gateway.url + "/v1/traces", protobuf_request(index, _SPANS_PER_REQUEST)) == 200
    total = _REQUESTS * _SPANS_PER_REQUEST
    assert downstream.wait_for(lambda d: len(d.spans()) >= total, timeout_s=20)
    gateway.wait_health(lambda h: h["buffered_requests"] == 0)
    seen = Counter(span.span_id for span in downstream.spans())
    assert len(seen) == total and set(seen.values()) == {1}
    assert downstream.attempts >= 8  # the 7 refusals were really given
    counts = gateway.health()["counts"]
    assert counts["forwarded:traces"] == total and "dropped:traces" not in counts
