"""The gateway's shutdown promise with the downstream dead: the documented exit code, within the
deadline, and no traceback (docs/gateway.md, "Shutdown")."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Callable

import pytest
from tests.gateway._traces import openinference_rag_trace, request
from tests.gateway.conftest import GatewayProcess, RawDownstream

pytestmark = pytest.mark.slow  # a real `groundwire serve` process

_DEADLINE_S = 3.0
_EXIT_SLACK_S = 2.0
"""Beyond the deadline: the interpreter's exit, joining the scoring child, closing sockets."""
_INTERRUPTED = 130


def _post(url: str, body: bytes) -> int:
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=10) as response:
        return int(response.status)


def test_sigterm_with_the_downstream_dead_exits_130_within_the_deadline_without_a_traceback(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """Downstream gone (connections refused), spans held for forwarding and traces open for
    scoring: SIGTERM ends the process by its deadline with 130 (the deadline cut work), its
    result exports counted as not exported, and no exception or traceback on stderr."""
    gateway = run_gateway(
        "--forward", downstream.endpoint, "-e", "quoted_spans", "--quiet-period", "30",
        env={
            "GROUNDWIRE_GATEWAY_SHUTDOWN_TIMEOUT_S": str(_DEADLINE_S),
            "GROUNDWIRE_GATEWAY_RETRY_INITIAL_S": "0.1",
            "GROUNDWIRE_GATEWAY_RETRY_MAX_S": "0.3",
        },
    )  # fmt: skip
    gateway.wait_health(lambda h: "submitted" in h.get("turns", {}))
    downstream.stop()
    for _ in range(3):
        assert _post(gateway.url + "/v1/traces", request(openinference_rag_trace())) == 200
    gateway.wait_health(lambda h: h.get("open_traces", 0) == 3)
    time.sleep(1.5)  # a metrics push or two fail against the dead downstream
    started = time.monotonic()
    code = gateway.terminate(timeout_s=30)
    elapsed = time.monotonic() - started
    output = gateway.output()
    assert code == _INTERRUPTED, output
    assert elapsed < _DEADLINE_S + _EXIT_SLACK_S, f"{elapsed:.1f} s\n{output}"
    assert "Traceback" not in output and "internal error" not in output, output
    assert "items left unforwarded" in output, output
    # the scoring process's result exports (one carrier span and one result event per turn)
    # are counted as not exported, not lost silently
    counted = r"not exported at shutdown \(deadline [\d.]+ s\): 3 spans, 3 log records"
    assert re.search(counted, output), output
