"""Chaos: an app (the OTel SDK's OTLP exporter, a separate process) sends a steady stream of RAG
traces while the gateway, with a persistent queue and scoring, is SIGKILLed under load several
times (while the downstream refuses with 503, so that requests are held) and restarted on the
same directory and port. Afterwards the downstream holds every span the
gateway answered 200 for (duplicates allowed and counted, losses not), and every turn whose spans
were all accepted has exactly one evaluation result (forwarded twice at most: the same carrier
span, a forward duplicate)."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.gateway.conftest import ROOT, GatewayProcess, RawDownstream

from groundwire import semconv

pytestmark = pytest.mark.slow  # real processes, 20-40 s (each gateway is killed while scoring)

_KILLS = 3


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_sigkill_under_load_loses_no_accepted_span_and_scores_every_turn(
    downstream: RawDownstream, tmp_path: Path
) -> None:
    port = _free_port()
    args = [
        "--listen", f"127.0.0.1:{port}", "--forward", downstream.endpoint,
        "--queue-dir", str(tmp_path / "queue"), "-e", "quoted_spans", "--quiet-period", "0.3",
    ]  # fmt: skip
    env = {"GROUNDWIRE_GATEWAY_RETRY_INITIAL_S": "0.05", "GROUNDWIRE_GATEWAY_RETRY_MAX_S": "0.3"}
    acked_file = tmp_path / "acked.txt"
    rng = random.Random(33)
    gateways = [GatewayProcess(args, tmp_path / "gateway-0.log", env)]
    client = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/gateway/_chaos_client.py"),
         f"http://127.0.0.1:{port}", "60", str(acked_file)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for kill in range(_KILLS):
            # each gateway is killed while it is scoring the stream (reports of scored traces
            # going to the queue every 50 ms), not while its scoring process is starting
            gateways[-1].wait_health(lambda h: h.get("turns", {}).get("scored", 0) > 0, 20)
            time.sleep(rng.uniform(0.3, 0.8))
            downstream.status = 503  # a struggling downstream: requests pile up in the queue
            time.sleep(rng.uniform(0.3, 0.8))
            gateways[-1].process.kill()  # SIGKILL, mid-load
            gateways[-1].process.wait(10)
            downstream.status = 200
            gateways.append(GatewayProcess(args, tmp_path / f"gateway-{kill + 1}.log", env))
        time.sleep(0.5)
        acked_file.with_name(acked_file.name + ".stop").touch()
        assert client.wait(60) == 0
        acked = [tuple(line.split()) for line in acked_file.read_text().splitlines()]
        acked_spans = {span_id for _, span_id in acked}
        assert len(acked_spans) > 100  # it really ran under load
        assert downstream.wait_for(
            lambda d: acked_spans <= {s.span_id for s in d.spans()}, timeout_s=30
        ), "spans answered 200 never reached the downstream"
        per_trace = Counter(trace_id for trace_id, _ in acked)
        whole = {trace_id for trace_id, count in per_trace.items() if count == 3}

        def results(d: RawDownstream) -> Counter[str]:
            """Evaluation results per trace: distinct carrier spans (a result forwarded twice
            keeps its span id: a forward duplicate, counted below, not a second scoring)."""
            carriers = {
                (s.trace_id, s.span_id) for s in d.spans() if s.name == semconv.EVALUATION_SPAN_NAME
            }
            return Counter(trace_id for trace_id, _ in carriers)

        assert downstream.wait_for(lambda d: whole <= set(results(d)), timeout_s=30), (
            f"{len(whole - set(results(downstream)))} accepted turns have no evaluation result"
        )
        received = Counter(s.span_id for s in downstream.spans())
        doubled_spans = sum(1 for span_id in acked_spans if received[span_id] > 1)
        scored = results(downstream)
        doubled_results = sorted(trace_id for trace_id, count in scored.items() if count > 1)
        print(
            f"chaos: {len(acked_spans)} spans accepted, {doubled_spans} forwarded twice; "
            f"{len(whole)} whole turns, {len(doubled_results)} scored twice; {_KILLS} SIGKILLs"
        )
        # Exactly one result per turn: the results of a trace are committed to the queue in the
        # transaction that records it as scored, and forwarded from there. A gateway that
        # records the scored mark apart from the results scores the turns of that window again
        # after each restart (planted, the mark in a second transaction after the results: N of
        # ~390 turns doubled); one that forgets what it scored rescores every replayed turn.
        assert not doubled_results, (
            f"{len(doubled_results)} turns got more than one evaluation result, e.g. "
            f"{doubled_results[:3]}: results and the scored mark are not committed together"
        )
    finally:
        if client.poll() is None:
            client.kill()
        for gateway in gateways:
            gateway.kill()
