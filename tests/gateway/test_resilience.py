"""The gateway under trouble: downstream down then back, a full buffer, SIGTERM mid-load, and two
replicas behind trace-id routing."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from tests.gateway._traces import new_span_id, new_trace_id, openinference_rag_trace, request
from tests.gateway.conftest import GatewayProcess, RawDownstream

from groundwire import semconv

pytestmark = pytest.mark.slow  # each test runs real `groundwire serve` processes


def _post(url: str, body: bytes) -> tuple[int, dict[str, str]]:
    req = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, dict(response.headers.items())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items())


def _health(gateway: GatewayProcess) -> dict[str, Any]:
    return json.loads(urllib.request.urlopen(gateway.url + "/healthz", timeout=5).read())


def _one_span(index: int) -> bytes:
    """A distinct one-span OTLP/JSON request."""
    from tests.gateway._traces import span

    return request([span(new_trace_id(), new_span_id(), None, f"op-{index:04d}", 1, 2, n=index)])


def test_downstream_outage_loses_nothing_within_the_buffer_and_counts_the_rest(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """With downstream refusing connections, requests are taken until the buffer is full, then
    refused with 503 + Retry-After (not ready); when downstream returns, exactly the accepted
    requests arrive, each once, and the refusals are counted exactly."""
    gateway = run_gateway(
        "--forward", downstream.endpoint, "--max-request-bytes", "1000",
        env={
            "GROUNDWIRE_GATEWAY_BUFFER_MAX_BYTES": "4000",
            "GROUNDWIRE_GATEWAY_RETRY_INITIAL_S": "0.1",
            "GROUNDWIRE_GATEWAY_RETRY_MAX_S": "0.3",
        },
    )  # fmt: skip
    downstream.stop()
    accepted: list[bytes] = []
    refused = 0
    for index in range(60):
        body = _one_span(index)
        status, headers = _post(gateway.url + "/v1/traces", body)
        if status == 200:
            accepted.append(body)
        else:
            assert status == 503 and int(headers["Retry-After"]) >= 1
            refused += 1
    assert 5 < len(accepted) < 60 and refused == 60 - len(accepted)
    with pytest.raises(urllib.error.HTTPError) as not_ready:
        urllib.request.urlopen(gateway.url + "/readyz", timeout=5)
    assert not_ready.value.code == 503
    time.sleep(0.5)
    downstream.start()
    assert downstream.wait_for(lambda d: len(d.bodies("/v1/traces")) >= len(accepted))
    time.sleep(0.3)
    assert Counter(downstream.bodies("/v1/traces")) == Counter(accepted)
    counts = _health(gateway)["counts"]
    assert counts["refused:traces:buffer_full"] == refused
    assert counts["forwarded:traces"] == counts["received:traces"] == len(accepted)
    assert counts.get("retried:traces", 0) >= 1
    assert not any(key.startswith("dropped:") for key in counts)
    assert urllib.request.urlopen(gateway.url + "/readyz", timeout=5).status == 200


def test_requests_past_the_retry_deadline_or_refused_downstream_are_counted_as_dropped(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """A downstream answering 503 (Retry-After honoured) past `retry_max_elapsed_s` makes the
    gateway give requests up as `expired`; a 400 drops at once as `rejected_downstream`; both
    counted exactly and logged."""
    gateway = run_gateway(
        "--forward", downstream.endpoint,
        env={"GROUNDWIRE_GATEWAY_RETRY_MAX_ELAPSED_S": "1.5",
             "GROUNDWIRE_GATEWAY_RETRY_INITIAL_S": "0.1"},
    )  # fmt: skip
    downstream.status, downstream.retry_after = 503, "1"
    for index in range(3):
        assert _post(gateway.url + "/v1/traces", _one_span(index))[0] == 200
    deadline = time.monotonic() + 15
    while _health(gateway)["counts"].get("dropped:traces:expired", 0) < 3:
        assert time.monotonic() < deadline, _health(gateway)
        time.sleep(0.1)
    first_attempts = downstream.attempts
    assert 3 < first_attempts < 30  # retried, but paced by Retry-After, not hammered
    downstream.status = 400
    assert _post(gateway.url + "/v1/traces", _one_span(9))[0] == 200
    assert downstream.wait_for(lambda d: d.attempts == first_attempts + 1)
    deadline = time.monotonic() + 5
    while _health(gateway)["counts"].get("dropped:traces:rejected_downstream", 0) < 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    counts = _health(gateway)["counts"]
    assert counts["dropped:traces"] == 4 and counts.get("forwarded:traces", 0) == 0
    log = gateway.output()
    assert "dropped 1 traces items (expired" in log
    assert "dropped 1 traces items (rejected_downstream" in log


def test_sigterm_mid_load_forwards_what_was_accepted_and_scores_what_it_holds(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """SIGTERM while a client is sending: every request answered 200 reaches downstream, the
    open traces are scored (their quiet period not yet over), and the process exits 0."""
    gateway = run_gateway(
        "--forward", downstream.endpoint, "-e", "quoted_spans", "--quiet-period", "30"
    )
    accepted: list[bytes] = []
    stop = threading.Event()

    def load() -> None:
        index = 0
        while not stop.is_set():
            body = _one_span(index)
            try:
                status, _ = _post(gateway.url + "/v1/traces", body)
            except (urllib.error.URLError, ConnectionError):
                return
            if status == 200:
                accepted.append(body)
            index += 1

    traces = [openinference_rag_trace() for _ in range(3)]
    for trace in traces:
        assert _post(gateway.url + "/v1/traces", request(trace))[0] == 200
    sender = threading.Thread(target=load)
    sender.start()
    time.sleep(0.5)
    code = gateway.terminate()
    stop.set()
    sender.join(10)
    assert code == 0, gateway.output()
    bodies = Counter(downstream.bodies("/v1/traces"))
    assert all(bodies[body] == 1 for body in accepted) and len(accepted) > 3
    carriers = [s for s in downstream.spans() if s.name == semconv.EVALUATION_SPAN_NAME]
    assert sorted(c.trace_id for c in carriers) == sorted(t[0]["traceId"] for t in traces)
    assert "nothing left behind" in gateway.output()


def test_two_replicas_each_receive_whole_traces_and_score_each_once(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """Routing by trace id (what the Collector's loadbalancing exporter does) over two replicas:
    each trace is scored exactly once, by the replica that received it."""
    replicas = [
        run_gateway("--forward", downstream.endpoint, "-e", "quoted_spans",
                    "--quiet-period", "0.3")
        for _ in range(2)
    ]  # fmt: skip
    traces = [openinference_rag_trace() for _ in range(6)]
    routed: dict[int, list[str]] = {0: [], 1: []}
    for trace in traces:
        trace_id = trace[0]["traceId"]
        replica = int(trace_id, 16) % 2
        routed[replica].append(trace_id)
        for span in trace:
            assert _post(replicas[replica].url + "/v1/traces", request([span]))[0] == 200
    assert downstream.wait_for(
        lambda d: len([s for s in d.spans() if s.name == semconv.EVALUATION_SPAN_NAME]) == 6
    )
    carriers = [s for s in downstream.spans() if s.name == semconv.EVALUATION_SPAN_NAME]
    assert sorted(c.trace_id for c in carriers) == sorted(t[0]["traceId"] for t in traces)
    for index, replica in enumerate(replicas):
        want = len(routed[index])
        turns = replica.wait_health(lambda h, n=want: h["turns"].get("scored") == n)["turns"]
        assert turns["submitted"] == turns["scored"] == want


def _scoring_child(gateway: GatewayProcess) -> str:
    """The pid of the gateway's scoring process (its other child is multiprocessing's resource
    tracker)."""
    from pathlib import Path

    pid = gateway.process.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    (child,) = [c for c in children if b"spawn_main" in Path(f"/proc/{c}/cmdline").read_bytes()]
    return child


def test_a_dead_scoring_process_never_stops_forwarding(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """Killing the scoring process: the gateway logs it, keeps forwarding every request, and
    counts the spans it can no longer score."""
    import os
    import signal

    gateway = run_gateway("--forward", downstream.endpoint, "-e", "quoted_spans")
    gateway.wait_health(lambda h: "submitted" in h.get("turns", {}))
    os.kill(int(_scoring_child(gateway)), signal.SIGKILL)
    gateway.wait_health(lambda h: h.get("scoring_process") == "stopped")
    time.sleep(1.5)  # the parent notices within a second
    trace = openinference_rag_trace()
    assert _post(gateway.url + "/v1/traces", request(trace))[0] == 200
    assert downstream.wait_for(lambda d: len(d.spans()) == 3)
    counts = gateway.wait_health(lambda h: h["counts"].get("not_scored:scoring_stopped") == 3)[
        "counts"
    ]
    assert counts["not_scored:scoring_stopped"] == 3 and counts["forwarded:traces"] == 3
    assert "the scoring process exited" in gateway.output()


def test_a_killed_gateway_takes_its_scoring_process_with_it(
    downstream: RawDownstream, run_gateway: Callable[..., GatewayProcess]
) -> None:
    """SIGKILL of the gateway (the OOM killer, a runtime's hard stop) gives its scoring process
    no stop message: it notices its parent is gone and exits within seconds, instead of waiting
    on its queue forever."""
    import os
    import signal
    from pathlib import Path

    gateway = run_gateway("--forward", downstream.endpoint, "-e", "quoted_spans")
    gateway.wait_health(lambda h: "submitted" in h.get("turns", {}))
    child = _scoring_child(gateway)
    os.kill(gateway.process.pid, signal.SIGKILL)
    gateway.process.wait(10)
    deadline = time.monotonic() + 15
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        if Path(f"/proc/{child}/stat").read_text().split(") ")[-1].startswith("Z"):
            break  # exited; a zombie only until init reaps it
        time.sleep(0.1)
    alive = Path(f"/proc/{child}").exists() and not Path(f"/proc/{child}/stat").read_text().split(
        ") "
    )[-1].startswith("Z")
    if alive:
        os.kill(int(child), signal.SIGKILL)
    assert not alive, "the scoring process outlived the gateway"
    assert "the gateway process is gone" in gateway.output()
