"""The gateway benchmark's payloads and load: SDK-encoded protobuf batches, whole RAG traces,
closed-loop and paced clients, the probe, and what is read back from the processes."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.benchmarks._gateway_processes import PROTOBUF, Process, get

PROBE_INTERVAL_S = 0.010
TRACES_PER_REQUEST = 20
"""RAG traces per feed request (3 spans each): the batches an SDK exporter sends."""


def batch(spans: int, prefix: str = "op") -> bytes:
    """A protobuf traces request of `spans` SDK spans with typical attributes."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    for index in range(spans):
        tracer.start_span(
            f"{prefix}-{index}",
            attributes={
                "http.request.method": "GET",
                "url.path": f"/api/items/{index}",
                "http.response.status_code": 200,
                "server.address": "api.internal",
                "user_agent.original": "bench/1.0",
                "app.tenant": "acme",
                "app.payload": "x" * 200,
            },
        ).end()
    return bytes(encode_spans(exporter.get_finished_spans()).SerializeToString())


def rag_template() -> Any:
    """One whole OpenInference RAG trace (3 spans) as a decoded protobuf request."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-rag"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    context = (
        "The Eiffel Tower was completed in 1889 and designed by the firm of Gustave Eiffel. " * 6
    )
    answer = 'Per the source, "the Eiffel Tower was completed in 1889" (see the record).'
    kind = "openinference.span.kind"
    with tracer.start_as_current_span(
        "rag", attributes={kind: "CHAIN", "input.value": "When?", "output.value": answer}
    ):
        with tracer.start_as_current_span(
            "retrieve",
            attributes={kind: "RETRIEVER", "retrieval.documents.0.document.content": context},
        ):
            pass
        with tracer.start_as_current_span("llm", attributes={kind: "LLM", "output.value": answer}):
            pass
    return encode_spans(exporter.get_finished_spans())


def rag_requests(count: int, seed: int) -> list[bytes]:
    """Requests holding TRACES_PER_REQUEST whole RAG traces each (as an SDK batch would),
    `count` traces in all, each with its own trace id (protobuf bodies)."""
    import random

    template = rag_template()
    spans = [s for g in template.resource_spans for sc in g.scope_spans for s in sc.spans]
    rng = random.Random(seed)
    bodies = []
    for _ in range(max(1, count // TRACES_PER_REQUEST)):
        del template.resource_spans[0].scope_spans[0].spans[:]
        for _ in range(TRACES_PER_REQUEST):
            trace_id = rng.getrandbits(128).to_bytes(16, "big")
            for span in spans:
                copy = template.resource_spans[0].scope_spans[0].spans.add()
                copy.CopyFrom(span)
                copy.trace_id = trace_id
        bodies.append(template.SerializeToString())
    return bodies


async def closed_loop(url: str, body: bytes, seconds: float, concurrency: int) -> int:
    """Requests answered 200 in `seconds` with `concurrency` clients posting back to back."""
    import aiohttp

    done = 0
    stop = time.monotonic() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def client() -> None:
            nonlocal done
            while time.monotonic() < stop:
                async with session.post(
                    url, data=body, headers={"Content-Type": PROTOBUF}
                ) as response:
                    await response.read()
                    if response.status == 200:
                        done += 1

        await asyncio.gather(*(client() for _ in range(concurrency)))
    return done


def process_cost(pid: int) -> tuple[float, int]:
    """CPU seconds (every thread) and bytes written to storage so far by process `pid`."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    written = Path(f"/proc/{pid}/io").read_text().split("write_bytes:")[1].split()[0]
    return cpu, int(written)


async def probe_and_feed(
    url: str, seconds: float, feed_rate: float, seed: int = 1
) -> tuple[dict[str, int], int, int]:
    """A paced 1-span probe (send times by name) and, when `feed_rate`, whole RAG traces posted
    at that rate. Returns (probe send times, spans answered 200, RAG traces answered 200)."""
    import aiohttp

    probes = {i: batch(1, prefix=f"probe-{i:05d}") for i in range(int(seconds / PROBE_INTERVAL_S))}
    rag = rag_requests(int(feed_rate * seconds), seed=seed)
    sent: dict[str, int] = {}
    accepted_spans = 0
    turns = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def post(body: bytes) -> bool:
            async with session.post(
                url + "/v1/traces", data=body, headers={"Content-Type": PROTOBUF}
            ) as response:
                await response.read()
                return response.status == 200

        async def probe() -> None:
            nonlocal accepted_spans
            start = time.monotonic()
            for index, body in probes.items():
                delay = start + index * PROBE_INTERVAL_S - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                sent[f"probe-{index:05d}-0"] = time.monotonic_ns()
                if await post(body):
                    accepted_spans += 1

        def fed(ok: bool) -> None:
            nonlocal accepted_spans, turns
            if ok:
                accepted_spans += 3 * TRACES_PER_REQUEST
                turns += TRACES_PER_REQUEST

        feeder = [_post_paced(session, url, rag, feed_rate, fed)] if feed_rate else []
        await asyncio.gather(probe(), *feeder)
    return sent, accepted_spans, turns


def latencies(sink: Process, sent: dict[str, int]) -> list[float]:
    """Milliseconds from send to sink arrival for each probe that arrived."""
    arrivals = get(sink.url + "/stats")["arrivals"]
    return sorted((arrivals[k] - v) / 1e6 for k, v in sent.items() if k in arrivals)


def pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def wait_drained(gateway: Process, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        health: dict[str, Any] = get(gateway.url + "/healthz")
        turns = health.get("turns", {})
        scoring_idle = "scoring_process" not in health or (
            "in_flight" in turns
            and turns["in_flight"] == 0
            and health["open_traces"] == 0
            and health["scoring_queue"] == 0
        )
        if (health["buffered_requests"] == 0 and scoring_idle) or time.monotonic() > deadline:
            return health
        time.sleep(0.2)


async def paced(url: str, rate: float, seconds: float) -> int:
    """Post whole RAG traces at `rate` per second for `seconds`; returns how many got a 200."""
    import aiohttp

    rag = rag_requests(int(rate * seconds), seed=int(rate))
    ok = 0

    def answered(status_ok: bool) -> None:
        nonlocal ok
        ok += status_ok * TRACES_PER_REQUEST

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        await _post_paced(session, url, rag, rate, answered)
    return ok


async def _post_paced(
    session: Any, url: str, bodies: list[bytes], rate: float, answered: Callable[[bool], None]
) -> None:
    """Post `bodies` (TRACES_PER_REQUEST traces each) at `rate` traces per second, each on time
    whether or not the earlier ones were answered; `answered(ok)` for each reply."""
    start = time.monotonic()
    per_s = rate / TRACES_PER_REQUEST

    async def one(body: bytes) -> None:
        async with session.post(
            url + "/v1/traces", data=body, headers={"Content-Type": PROTOBUF}
        ) as response:
            await response.read()
            answered(response.status == 200)

    tasks = []
    for index, body in enumerate(bodies):
        delay = start + index / per_s - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(body)))
    await asyncio.gather(*tasks)
