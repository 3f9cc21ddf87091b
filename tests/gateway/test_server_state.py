"""`Gateway` state without scoring: `/healthz`'s uptime (seconds since the gateway was built,
to the millisecond) and the gateway's own metrics, which go to the downstream through the
gateway's meter provider (flushed at the stop). Real parts, a scripted real downstream."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from tests.gateway._in_process import gateway_config as _config
from tests.gateway._scripted import http_downstream

from groundwire import semconv
from groundwire.gateway import Gateway, ShutdownReport


def test_the_uptime_counts_seconds_since_the_gateway_was_built_to_the_millisecond() -> None:
    """`uptime_s` grows from zero at construction, in seconds, rounded to three decimals."""
    before = time.monotonic()
    gateway = Gateway(_config("http://127.0.0.1:9"))
    try:
        seen = []
        for _ in range(6):
            time.sleep(0.023)
            uptime = gateway.health()["uptime_s"]
            assert isinstance(uptime, float)
            assert 0.02 <= uptime <= time.monotonic() - before + 0.001
            seen.append(uptime)
        assert all(value == round(value, 3) for value in seen)
        assert any(value != round(value, 2) for value in seen)
        assert seen == sorted(seen)
    finally:
        gateway.providers.shutdown(1.0)


def _metric_names(bodies: list[bytes]) -> set[str]:
    names = set()
    for body in bodies:
        message = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
        for resource in message.resource_metrics:
            for scope in resource.scope_metrics:
                names.update(metric.name for metric in scope.metrics)
    return names


def test_the_gateways_own_metrics_reach_the_downstream() -> None:
    """The counters are made on the gateway's meter provider: what it received is exported to
    the downstream's /v1/metrics, at the latest when the stop flushes the providers."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            gateway = Gateway(_config(downstream.url, shutdown_timeout_s=5))
            task = asyncio.create_task(gateway.run())
            deadline = time.monotonic() + 20
            while not gateway.ready():
                assert time.monotonic() < deadline and not task.done()
                await asyncio.sleep(0.01)
            base = f"http://127.0.0.1:{gateway.http_port}"
            async with aiohttp.ClientSession() as session:
                headers = {"Content-Type": "application/x-protobuf"}
                async with session.post(base + "/v1/traces", data=b"", headers=headers):
                    pass
            gateway.stop()
            assert await asyncio.wait_for(task, 30) == ShutdownReport(0, True)
            bodies = [body for path, _, body in downstream.seen if path == "/v1/metrics"]
            assert semconv.METRIC_GATEWAY_RECEIVED in _metric_names(bodies)

    asyncio.run(scenario())


def test_a_gateway_not_yet_running_is_not_ready_and_stop_is_a_no_op() -> None:
    """Built but not run: not accepting (`/healthz` says False, `ready()` is False), no ports
    yet, and `stop()` does nothing (there is no run to stop)."""
    gateway = Gateway(_config("http://127.0.0.1:9"))
    try:
        assert gateway.ready() is False
        assert gateway.health()["accepting"] is False
        assert gateway.http_port is None
        assert gateway.grpc_port is None
        gateway.stop()
        assert gateway.ready() is False
    finally:
        gateway.providers.shutdown(1.0)
