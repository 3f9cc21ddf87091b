"""Gateway benchmark: pass-through throughput and latency vs a minimal OTLP proxy, scoring rate,
and forwarded-span loss under evaluator overload.

Every side runs as its own process on loopback: a sink (aiohttp, answers 200 at once), the load
generator (aiohttp client, in this process), and either `groundwire serve` or a minimal OTLP proxy
written on the same stack (aiohttp server that posts each body to the sink with an aiohttp client
and answers 200: the physical limit of this stack). Same payload, same concurrency, same warm-up,
runs alternated; median of RUNS with min/max; ratios from one run.

1. Throughput, evaluation off: spans/s through each (50-span protobuf requests, closed loop).
2. Latency while evaluation runs flat out: a paced probe (one 1-span request every 10 ms) through
   the gateway while a feeder saturates its scoring with RAG traces, vs the same probe through the
   proxy and straight to the sink. Latency = sink arrival - client send (CLOCK_MONOTONIC).
3. Loss under evaluator overload: every span the feeder and probe got a 200 for must reach the
   sink (carrier spans excluded): the figure is the difference, which must be exactly 0.
4. Scoring: turns scored per second with one worker thread (one core), then the share of turns
   scored vs dropped when fed at 1x, 2x and 4x that rate; RSS of the gateway over MEMORY_S at 1x.
5. The persistent queue (`--queue-dir`): pass-through throughput with the queue vs without it vs
   the minimal proxy (closed loop, as in 1), and the p99 latency a paced probe gains through it.

Run: `python -m tests.benchmarks gateway`. Writes results/gateway.{md,json}.
`python -m tests.benchmarks.bench_gateway queue` runs part 5 alone and updates its section.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.benchmarks._timing import results_dir, scaled, smoke

RESULTS = results_dir()
ROOT = Path(__file__).resolve().parents[2]
RUNS = scaled(3, 1)
WARMUP_S = 0.2 if smoke() else 1.0
DURATION_S = 0.5 if smoke() else 5.0
CONCURRENCY = 16
SPANS_PER_REQUEST = 50
PROBE_INTERVAL_S = 0.010
LATENCY_S = 1.0 if smoke() else 10.0
RATE_S = 1.0 if smoke() else 8.0
MEMORY_S = 2.0 if smoke() else 60.0
SATURATE_RATE = 1500.0
"""Traces per second posted for 2 s to fill the scoring queues before measuring the rate."""
FEED_FACTOR = 4.0
TRACES_PER_REQUEST = 20
"""RAG traces per feed request (3 spans each): the batches an SDK exporter sends."""
FEED_CAP = 1000.0
_PROTOBUF = "application/x-protobuf"


# --- the processes -------------------------------------------------------------------------------


def _sink_main(port_file: str, record: bool) -> None:
    """The downstream: answers 200 at once; with `record`, decodes spans and notes arrivals."""
    from aiohttp import web

    requests = 0
    spans = 0
    carriers = 0
    arrivals: dict[str, int] = {}

    async def post(request: web.Request) -> web.Response:
        nonlocal requests, spans, carriers
        body = await request.read()
        now = time.monotonic_ns()
        requests += 1
        if record and request.path == "/v1/traces":
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

            message = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            for group in message.resource_spans:
                for scope in group.scope_spans:
                    for span in scope.spans:
                        if span.name == "evaluation":
                            carriers += 1
                            continue
                        spans += 1
                        if span.name.startswith("probe-"):
                            arrivals[span.name] = now
        return web.Response(body=b"", content_type=_PROTOBUF)

    async def stats(request: web.Request) -> web.Response:
        return web.json_response(
            {"requests": requests, "spans": spans, "carriers": carriers, "arrivals": arrivals}
        )

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/{signal}", post)
    app.router.add_get("/stats", stats)
    _serve(app, port_file)


def _proxy_main(port_file: str, downstream: str) -> None:
    """The minimal OTLP proxy: each body posted on as it came, then an empty 200."""
    import aiohttp
    from aiohttp import web

    session: aiohttp.ClientSession | None = None

    async def post(request: web.Request) -> web.Response:
        nonlocal session
        if session is None:
            session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        body = await request.read()
        async with session.post(
            downstream + request.path, data=body, headers={"Content-Type": request.content_type}
        ) as response:
            await response.read()
        return web.Response(body=b"", content_type=_PROTOBUF)

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/{signal}", post)
    _serve(app, port_file)


def _serve(app: Any, port_file: str) -> None:
    """Run an aiohttp app on a free loopback port, written to `port_file`."""
    from aiohttp import web

    async def run() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        Path(port_file).write_text(str(port))
        await asyncio.Event().wait()

    asyncio.run(run())


class _Process:
    """A role or `groundwire serve` in a subprocess, with its port."""

    def __init__(self, args: list[str], port_file: Path | None, log: Path) -> None:
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
        self._log = log.open("wb")
        self.log = log
        self.process = subprocess.Popen(args, stdout=self._log, stderr=self._log, env=env)
        self.port = self._wait(port_file)

    def _wait(self, port_file: Path | None) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if port_file is not None and port_file.exists() and port_file.read_text():
                return int(port_file.read_text())
            if port_file is None:
                text = self.log.read_text(errors="replace")
                marker = "gateway ready: http=http://127.0.0.1:"
                if marker in text:
                    return int(text.split(marker, 1)[1].split()[0])
            if self.process.poll() is not None:
                raise RuntimeError(self.log.read_text(errors="replace"))
            time.sleep(0.05)
        raise RuntimeError(f"not ready: {self.log}")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def rss_mb(self) -> float:
        """Resident memory of the process and its children (the scoring process), in MB."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        total = 0.0
        for each in [str(pid), *children]:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        return total

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self._log.close()


def _role(name: str, tmp: Path, *args: object) -> _Process:
    port_file = tmp / f"{name}-{time.monotonic_ns()}.port"
    call = (
        f"from tests.benchmarks.bench_gateway import _{name}_main as m; "
        f"m(*{[str(port_file), *args]!r})"
    )
    return _Process([sys.executable, "-c", call], port_file, tmp / f"{name}.log")


def _sink(tmp: Path, record: bool) -> _Process:
    return _role("sink", tmp, record)


def _gateway(
    tmp: Path, forward: str, *extra: str, config: dict[str, Any] | None = None
) -> _Process:
    args = [sys.executable, "-c", "from groundwire.cli import main; main()", "serve",
            "--listen", "127.0.0.1:0", "--forward", forward, *extra]  # fmt: skip
    if config:
        path = tmp / f"gateway-{time.monotonic_ns()}.yaml"
        path.write_text(json.dumps(config))  # JSON is YAML
        args += ["--config", str(path)]
    process = _Process(args, None, tmp / f"gateway-{time.monotonic_ns()}.log")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # ready: listening and (when on) the scorer is up
        try:
            urllib.request.urlopen(process.url + "/readyz", timeout=5)
            break
        except OSError:
            time.sleep(0.1)
    return process


def _get(url: str) -> Any:
    return json.loads(urllib.request.urlopen(url, timeout=30).read())


# --- payloads ------------------------------------------------------------------------------------


def _batch(spans: int, prefix: str = "op") -> bytes:
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


def _rag_template() -> Any:
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


def _rag_requests(count: int, seed: int) -> list[bytes]:
    """Requests holding TRACES_PER_REQUEST whole RAG traces each (as an SDK batch would),
    `count` traces in all, each with its own trace id (protobuf bodies)."""
    import random

    template = _rag_template()
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


# --- load ----------------------------------------------------------------------------------------


async def _closed_loop(url: str, body: bytes, seconds: float, concurrency: int) -> int:
    """Requests answered 200 in `seconds` with `concurrency` clients posting back to back."""
    import aiohttp

    done = 0
    stop = time.monotonic() + seconds
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def client() -> None:
            nonlocal done
            while time.monotonic() < stop:
                async with session.post(
                    url, data=body, headers={"Content-Type": _PROTOBUF}
                ) as response:
                    await response.read()
                    if response.status == 200:
                        done += 1

        await asyncio.gather(*(client() for _ in range(concurrency)))
    return done


def _process_cost(pid: int) -> tuple[float, int]:
    """CPU seconds (every thread) and bytes written to storage so far by process `pid`."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    written = Path(f"/proc/{pid}/io").read_text().split("write_bytes:")[1].split()[0]
    return cpu, int(written)


def _throughput_cost(front: _Process, body: bytes) -> tuple[float, float, float]:
    """Spans per second through `front` (after WARMUP_S), and its CPU microseconds and bytes
    written to disk per request meanwhile (less sensitive to other load than spans/s)."""
    url = front.url + "/v1/traces"
    asyncio.run(_closed_loop(url, body, WARMUP_S, CONCURRENCY))
    cpu, written = _process_cost(front.process.pid)
    started = time.monotonic()
    done = asyncio.run(_closed_loop(url, body, DURATION_S, CONCURRENCY))
    elapsed = time.monotonic() - started
    cpu_after, written_after = _process_cost(front.process.pid)
    per = max(done, 1)
    return (
        done * SPANS_PER_REQUEST / elapsed,
        (cpu_after - cpu) / per * 1e6,
        (written_after - written) / per,
    )


def _throughput(url: str, body: bytes) -> float:
    """Spans per second through `url` (after WARMUP_S)."""
    asyncio.run(_closed_loop(url + "/v1/traces", body, WARMUP_S, CONCURRENCY))
    started = time.monotonic()
    done = asyncio.run(_closed_loop(url + "/v1/traces", body, DURATION_S, CONCURRENCY))
    return done * SPANS_PER_REQUEST / (time.monotonic() - started)


async def _probe_and_feed(
    url: str, seconds: float, feed_rate: float, seed: int = 1
) -> tuple[dict[str, int], int, int]:
    """A paced 1-span probe (send times by name) and, when `feed_rate`, whole RAG traces posted
    at that rate. Returns (probe send times, spans answered 200, RAG traces answered 200)."""
    import aiohttp

    probes = {i: _batch(1, prefix=f"probe-{i:05d}") for i in range(int(seconds / PROBE_INTERVAL_S))}
    rag = _rag_requests(int(feed_rate * seconds), seed=seed)
    sent: dict[str, int] = {}
    accepted_spans = 0
    turns = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def post(body: bytes) -> bool:
            async with session.post(
                url + "/v1/traces", data=body, headers={"Content-Type": _PROTOBUF}
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

        async def one(body: bytes) -> None:
            nonlocal accepted_spans, turns
            if await post(body):
                accepted_spans += 3 * TRACES_PER_REQUEST
                turns += TRACES_PER_REQUEST

        async def feeder() -> None:
            start = time.monotonic()
            tasks = []
            per_s = feed_rate / TRACES_PER_REQUEST
            for index, body in enumerate(rag):
                delay = start + index / per_s - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                tasks.append(asyncio.create_task(one(body)))
            await asyncio.gather(*tasks)

        await asyncio.gather(probe(), *([feeder()] if feed_rate else []))
    return sent, accepted_spans, turns


def _latencies(sink: _Process, sent: dict[str, int]) -> list[float]:
    """Milliseconds from send to sink arrival for each probe that arrived."""
    arrivals = _get(sink.url + "/stats")["arrivals"]
    return sorted((arrivals[k] - v) / 1e6 for k, v in sent.items() if k in arrivals)


def _pct(values: list[float], q: float) -> float:
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def _wait_drained(gateway: _Process, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        health = _get(gateway.url + "/healthz")
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


async def _paced(url: str, rate: float, seconds: float) -> int:
    """Post whole RAG traces at `rate` per second for `seconds`; returns how many got a 200."""
    import aiohttp

    rag = _rag_requests(int(rate * seconds), seed=int(rate))
    ok = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(body: bytes) -> None:
            nonlocal ok
            async with session.post(
                url + "/v1/traces", data=body, headers={"Content-Type": _PROTOBUF}
            ) as response:
                await response.read()
                ok += (response.status == 200) * TRACES_PER_REQUEST

        start = time.monotonic()
        tasks = []
        per_s = rate / TRACES_PER_REQUEST
        for index, body in enumerate(rag):
            delay = start + index / per_s - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(body)))
        await asyncio.gather(*tasks)
    return ok


def _queue_part(tmp: Path) -> dict[str, Any]:
    """Part 5: the gateway with `--queue-dir` vs without vs the minimal proxy."""
    body = _batch(SPANS_PER_REQUEST)
    sink = _sink(tmp, record=True)
    proxy = _role("proxy", tmp, sink.url)
    memory = _gateway(tmp, sink.url)
    queued = _gateway(tmp, sink.url, "--queue-dir", str(tmp / f"queue-{time.monotonic_ns()}"))
    unsynced = _gateway(
        tmp,
        sink.url,
        "--queue-dir",
        str(tmp / f"queue-{time.monotonic_ns()}"),
        config={"queue_fsync": False},
    )
    fronts = {
        "proxy": proxy,
        "gateway": memory,
        "gateway_queue": queued,
        "gateway_queue_nofsync": unsynced,
    }
    runs: dict[str, list[float]] = {side: [] for side in fronts}
    costs: dict[str, list[tuple[float, float]]] = {side: [] for side in fronts}
    latency: dict[str, Any] = {}
    try:
        for _ in range(RUNS):
            for side, front in fronts.items():
                rate, cpu_us, written = _throughput_cost(front, body)
                runs[side].append(rate)
                costs[side].append((cpu_us, written))
            print("queue throughput run: " + ", ".join(
                f"{side} {values[-1]:.0f}" for side, values in runs.items()) + " spans/s",
                flush=True)  # fmt: skip
        for side, front in (("direct", sink), *fronts.items()):
            asyncio.run(_probe_and_feed(front.url, WARMUP_S, 0.0, seed=2))
            sent, _, _ = asyncio.run(_probe_and_feed(front.url, LATENCY_S, 0.0))
            time.sleep(0.5)
            values = _latencies(sink, sent)
            latency[side] = {"p50_ms": _pct(values, 0.50), "p99_ms": _pct(values, 0.99),
                             "probes": len(values)}  # fmt: skip
            print(f"queue latency {side}: {latency[side]}", flush=True)
    finally:
        for process in (unsynced, queued, memory, proxy, sink):
            process.stop()
    out: dict[str, Any] = {
        side: {"median": statistics.median(v), "min": min(v), "max": max(v)}
        for side, v in runs.items()
    }
    pairs = (("queue_vs_memory", "gateway_queue", "gateway"),
             ("queue_vs_proxy", "gateway_queue", "proxy"),
             ("nofsync_vs_memory", "gateway_queue_nofsync", "gateway"))  # fmt: skip
    for name, top, bottom in pairs:
        ratios = [a / b for a, b in zip(runs[top], runs[bottom], strict=True)]
        out[name] = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)}
    out["cost"] = {
        side: {"cpu_us": statistics.median(c for c, _ in v),
               "disk_bytes": statistics.median(w for _, w in v)}
        for side, v in costs.items()
    }  # fmt: skip
    out["latency"] = latency
    out["queue_added_p99_ms"] = latency["gateway_queue"]["p99_ms"] - latency["gateway"]["p99_ms"]
    out["nofsync_added_p99_ms"] = (
        latency["gateway_queue_nofsync"]["p99_ms"] - latency["gateway"]["p99_ms"]
    )
    out["fsync_ms"] = _fsync_ms(tmp)
    out["load_average_1m"] = os.getloadavg()[0]
    out["measured"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return out


def _fsync_ms(tmp: Path) -> dict[str, float]:
    """This disk's cost of one small SQLite commit with fsync (WAL, synchronous=FULL): the floor
    under the queue's added latency."""
    import sqlite3

    db = sqlite3.connect(tmp / "fsync.sqlite3", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (x BLOB)")
    times = []
    for _ in range(200):
        started = time.perf_counter()
        db.execute("INSERT INTO t VALUES (?)", (os.urandom(500),))
        times.append((time.perf_counter() - started) * 1000)
    db.close()
    times.sort()
    return {"p50": _pct(times, 0.50), "p99": _pct(times, 0.99)}


def _queue_only() -> None:
    """Run part 5 alone; its section of results/gateway.{json,md} is replaced."""
    path = RESULTS / "gateway.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `python -m tests.benchmarks gateway` first")
    out = json.loads(path.read_text())
    out["queue"] = _queue_part(Path(tempfile.mkdtemp(prefix="bench-gateway-")))
    path.write_text(json.dumps(out, indent=2) + "\n")
    (RESULTS / "gateway.md").write_text(_markdown(out))
    print("\n".join(_queue_markdown(out["queue"])))


# --- main ----------------------------------------------------------------------------------------

_EVAL_CONFIG = {
    "evaluators": ["quoted_spans", "quote_verification"],
    "evaluator_options": {"quote_verification": {"embedder": None}},
    "quiet_period_s": 0.2,
    "eval_queue_size": 256,
    "workers": 1,
}


def _scoring(tmp: Path) -> dict[str, Any]:
    """Turns scored per second when saturated, then 1x/2x/4x of it; RSS at 1x."""
    sink = _sink(tmp, record=False)
    scoring: dict[str, Any] = {}
    try:
        gateway = _gateway(tmp, sink.url, config=_EVAL_CONFIG)
        try:
            asyncio.run(_paced(gateway.url, SATURATE_RATE, 2.0))
            health = _get(gateway.url + "/healthz")
            before = health["turns"].get("scored", 0) + health["turns"].get("errored", 0)
            started = time.monotonic()
            time.sleep(RATE_S)  # the queues are full: the runner scores flat out meanwhile
            health = _get(gateway.url + "/healthz")
            after = health["turns"].get("scored", 0) + health["turns"].get("errored", 0)
            rate = max(1.0, (after - before) / (time.monotonic() - started))
        finally:
            gateway.stop()
        scoring["turns_per_s_one_worker"] = rate
        for factor in (1, 2, 4):
            gateway = _gateway(tmp, sink.url, config=_EVAL_CONFIG)
            try:
                seconds = MEMORY_S if factor == 1 else RATE_S
                rss: list[float] = []
                asyncio.run(_feed_and_sample(gateway, rate * factor, seconds, rss))
                health = _wait_drained(gateway)
                turns = health["turns"]
                not_scored = sum(
                    v for k, v in health["counts"].items() if k.startswith("not_scored:")
                )
                fed = turns["submitted"] + not_scored // 3
                scoring[f"{factor}x"] = {
                    "rate_per_s": rate * factor,
                    "seconds": seconds,
                    "turns_fed": fed,
                    "scored_share": (turns["scored"] + turns["errored"]) / max(1, fed),
                    "dropped_share": (turns["dropped"] + not_scored // 3) / max(1, fed),
                    "rss_mb": rss,
                }
                print(f"scoring {factor}x: {scoring[f'{factor}x']}", flush=True)
            finally:
                gateway.stop()
    finally:
        sink.stop()
    return scoring


async def _feed_and_sample(
    target: _Process, per_s: float, seconds: float, samples: list[float]
) -> int:
    """Feed RAG traces at `per_s` while sampling the gateway's RSS every 5 s."""
    task = asyncio.create_task(_paced(target.url, per_s, seconds))
    while not task.done():
        samples.append(target.rss_mb())
        await asyncio.sleep(5.0)
    return await task


def main() -> None:
    """Run every part and write the results."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    out: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "settings": {
            "runs": RUNS, "duration_s": DURATION_S, "warmup_s": WARMUP_S,
            "concurrency": CONCURRENCY, "spans_per_request": SPANS_PER_REQUEST,
            "probe_interval_s": PROBE_INTERVAL_S, "latency_s": LATENCY_S, "memory_s": MEMORY_S,
        },
    }  # fmt: skip
    body = _batch(SPANS_PER_REQUEST)
    out["settings"]["request_bytes"] = len(body)

    # 1. throughput, evaluation off
    sink = _sink(tmp, record=False)
    proxy = _role("proxy", tmp, sink.url)
    gateway = _gateway(tmp, sink.url)
    runs: dict[str, list[float]] = {"proxy": [], "gateway": []}
    try:
        for _ in range(RUNS):
            runs["proxy"].append(_throughput(proxy.url, body))
            runs["gateway"].append(_throughput(gateway.url, body))
            print(f"throughput run: proxy {runs['proxy'][-1]:.0f}, "
                  f"gateway {runs['gateway'][-1]:.0f} spans/s", flush=True)  # fmt: skip
    finally:
        for process in (gateway, proxy, sink):
            process.stop()
    ratios = [g / p for g, p in zip(runs["gateway"], runs["proxy"], strict=True)]
    out["throughput"] = {
        side: {"median": statistics.median(v), "min": min(v), "max": max(v)}
        for side, v in runs.items()
    }
    out["throughput"]["ratio"] = {
        "median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)
    }  # fmt: skip

    # 4 first: the scoring rate sets the feed of the latency part
    out["scoring"] = _scoring(tmp)
    rate = out["scoring"]["turns_per_s_one_worker"]

    # 2 + 3. latency while evaluation runs flat out (fed FEED_FACTOR x what it scores); loss
    feed_rate = min(FEED_CAP, FEED_FACTOR * rate)
    out["settings"]["feed_rate_per_s"] = feed_rate
    latency: dict[str, Any] = {}
    sides: tuple[tuple[str, float, dict[str, Any] | None], ...] = (
        ("direct", 0.0, None),
        ("proxy", feed_rate, None),
        ("gateway_eval_off", feed_rate, {}),
        ("gateway_eval_on", feed_rate, _EVAL_CONFIG),
    )
    for side, feed, config in sides:
        sink = _sink(tmp, record=True)
        front: _Process | None = None
        try:
            if side == "proxy":
                front = _role("proxy", tmp, sink.url)
            elif config is not None:
                front = _gateway(tmp, sink.url, config=config or None)
            url = front.url if front is not None else sink.url
            # the same warm-up on every side (first connections, first decodes), then measure
            _, warm_spans, warm_turns = asyncio.run(_probe_and_feed(url, WARMUP_S, feed, seed=2))
            sent, accepted, turns = asyncio.run(_probe_and_feed(url, LATENCY_S, feed))
            accepted, turns = accepted + warm_spans, turns + warm_turns
            health = _wait_drained(front) if front is not None and config else {}
            time.sleep(1.0)
            values = _latencies(sink, sent)
            stats = _get(sink.url + "/stats")
            latency[side] = {
                "p50_ms": _pct(values, 0.50), "p99_ms": _pct(values, 0.99),
                "max_ms": values[-1] if values else float("nan"), "probes": len(values),
            }  # fmt: skip
            if side == "gateway_eval_on":
                turns_info = health["turns"]
                not_scored = sum(
                    v for k, v in health["counts"].items() if k.startswith("not_scored:")
                )
                out["overload"] = {
                    "spans_accepted": accepted,
                    "spans_at_sink": stats["spans"],
                    "forwarded_span_loss": accepted - stats["spans"],
                    "rag_turns_accepted": turns,
                    "turns_submitted": turns_info["submitted"],
                    "turns_scored": turns_info["scored"] + turns_info["errored"],
                    "turns_dropped": turns_info["dropped"],
                    "spans_not_scored": not_scored,
                    "carrier_spans": stats["carriers"],
                }
            print(f"latency {side}: {latency[side]}", flush=True)
        finally:
            if front is not None:
                front.stop()
            sink.stop()
    on, off = latency["gateway_eval_on"], latency["gateway_eval_off"]
    latency["evaluation_added_p99_ms"] = on["p99_ms"] - off["p99_ms"]
    latency["gateway_vs_proxy_p99_ms"] = on["p99_ms"] - latency["proxy"]["p99_ms"]
    out["latency"] = latency
    out["queue"] = _queue_part(tmp)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "gateway.json").write_text(json.dumps(out, indent=2) + "\n")
    (RESULTS / "gateway.md").write_text(_markdown(out))
    print(_markdown(out))


def _markdown(out: dict[str, Any]) -> str:
    t, lat, ov, sc = out["throughput"], out["latency"], out["overload"], out["scoring"]
    s = out["settings"]
    rows = [
        "# Gateway benchmark",
        "",
        f"Python {out['machine']['python']}, {out['machine']['cpus']} CPUs (shared with other "
        "work; figures vary run to run). Every part is a separate process on loopback.",
        "",
        f"## Pass-through throughput, evaluation off ({s['runs']} runs of {s['duration_s']} s "
        f"after {s['warmup_s']} s warm-up; {s['concurrency']} clients; "
        f"{s['spans_per_request']}-span protobuf requests of {s['request_bytes']} bytes)",
        "",
        "| side | spans/s median | min | max |",
        "|---|---|---|---|",
        f"| minimal OTLP proxy (aiohttp server + client) | {t['proxy']['median']:,.0f} | "
        f"{t['proxy']['min']:,.0f} | {t['proxy']['max']:,.0f} |",
        f"| groundwire serve | {t['gateway']['median']:,.0f} | {t['gateway']['min']:,.0f} | "
        f"{t['gateway']['max']:,.0f} |",
        f"| **ratio gateway / proxy** | **{t['ratio']['median']:.2f}x** | "
        f"{t['ratio']['min']:.2f}x | {t['ratio']['max']:.2f}x |",
        "",
        "Both deliver every span. The gateway answers once a request is decoded and buffered and "
        "forwards it from the buffer (4 senders); the minimal proxy answers only after downstream "
        "acknowledged, so it holds a connection per request in flight. The gateway also decodes "
        "every request (to validate and count it), which the proxy does not. The two do not send "
        "the same number of requests downstream: the gateway joins protobuf requests queued "
        "behind each other into one (up to 1 MiB, as the Collector's batch processor would), "
        "the proxy sends one per request; most of the gateway's lead comes from that.",
        "",
        f"## Forwarding latency while evaluation runs flat out ({s['latency_s']} s; one 1-span "
        f"probe every {s['probe_interval_s'] * 1000:.0f} ms beside a feed of "
        f"{s['feed_rate_per_s']:.0f} RAG traces/s, {FEED_FACTOR:.0f}x the scoring rate)",
        "",
        "| path | p50 ms | p99 ms | max ms | probes |",
        "|---|---|---|---|---|",
    ]
    for side, label in (
        ("direct", "probe alone, client -> sink"),
        ("proxy", "via minimal proxy, same feed"),
        ("gateway_eval_off", "via gateway, evaluation off, same feed"),
        ("gateway_eval_on", "via gateway, evaluation saturated"),
    ):
        row = lat[side]
        rows.append(
            f"| {label} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | {row['max_ms']:.2f} | "
            f"{row['probes']} |"
        )
    rows += [
        "",
        f"Added at p99 by evaluation running flat out (on - off): "
        f"**{lat['evaluation_added_p99_ms']:.2f} ms**; gateway with evaluation vs the minimal "
        f"proxy: {lat['gateway_vs_proxy_p99_ms']:.2f} ms.",
        "",
        "## Forwarded-span loss under evaluator overload (same run)",
        "",
        f"- spans answered 200: {ov['spans_accepted']:,}; spans at the sink: "
        f"{ov['spans_at_sink']:,}; **loss: {ov['forwarded_span_loss']}**",
        f"- RAG turns accepted {ov['rag_turns_accepted']:,}: submitted to the runner "
        f"{ov['turns_submitted']:,}, scored {ov['turns_scored']:,}, dropped by the runner "
        f"{ov['turns_dropped']:,}; spans left out of scoring at intake: "
        f"{ov['spans_not_scored']:,}; carrier spans written: {ov['carrier_spans']:,}",
        "",
        "## Scoring (quoted_spans + quote_verification without embedder; one worker thread)",
        "",
        f"Turns scored per second while saturated: **{sc['turns_per_s_one_worker']:.0f}** "
        "(one worker: about one core).",
        "",
        "| fed at | turns/s | seconds | turns fed | scored | dropped | RSS MB, both processes |",
        "|---|---|---|---|---|---|---|",
    ]
    for factor in ("1x", "2x", "4x"):
        row = sc[factor]
        rss = ", ".join(f"{v:.0f}" for v in row["rss_mb"])
        rows.append(
            f"| {factor} | {row['rate_per_s']:.0f} | {row['seconds']:.0f} | {row['turns_fed']:,} | "
            f"{row['scored_share']:.1%} | {row['dropped_share']:.1%} | {rss} |"
        )
    rows += [
        "",
        f"Reading these figures: the 2x and 4x runs last {RATE_S:.0f} s, and the scoring process's "
        "inbox (`scoring_queue_requests` requests, here of 20 traces each) absorbs that much "
        "excess and scores it afterwards, so they show drops only once a backlog outgrows it; the "
        "1x run shows whether the measured rate holds for a minute. Latency percentiles on a "
        "shared 2-core machine move several-fold between runs (the load average was far above "
        "2 while this ran); the loss figure does not.",
        "",
    ]
    if "queue" in out:
        rows += _queue_markdown(out["queue"])
    return "\n".join(rows)


_QUEUE_SIDES = (("proxy", "minimal OTLP proxy"), ("gateway", "groundwire serve"),
                ("gateway_queue", "groundwire serve --queue-dir"),
                ("gateway_queue_nofsync", "--queue-dir, queue_fsync: false"))  # fmt: skip


def _queue_markdown(q: dict[str, Any]) -> list[str]:
    """Part 5's section."""
    rows = [
        "## The persistent queue (`--queue-dir`): pass-through, evaluation off",
        "",
        "Each request is committed to SQLite (WAL, `synchronous=FULL`: on disk before the 200; "
        "concurrent requests share a commit; `secure_delete=FAST`) and deleted once delivered. "
        "Same closed loop as above, runs alternated; every side measured in the same run"
        + (
            f" ({q['measured']}, load average {q['load_average_1m']:.1f} on "
            f"{os.cpu_count()} CPUs at the end"
            + (
                ", more than the benchmark's own processes: the machine was shared"
                if q["load_average_1m"] > 4
                else ""
            )
            + ": compare the ratios, not the spans/s with the sections above)"
            if "measured" in q
            else ""
        )
        + ".",
        "",
        "| side | spans/s median | min | max |",
        "|---|---|---|---|",
    ]
    for side, label in _QUEUE_SIDES:
        if side not in q:
            continue
        row = q[side]
        rows.append(f"| {label} | {row['median']:,.0f} | {row['min']:,.0f} | {row['max']:,.0f} |")
    for name, label in (("queue_vs_memory", "with the queue / without"),
                        ("queue_vs_proxy", "with the queue / proxy"),
                        ("nofsync_vs_memory", "queue without fsync / without queue")):  # fmt: skip
        if name not in q:
            continue
        r = q[name]
        rows.append(f"| **ratio {label}** | **{r['median']:.2f}x** | {r['min']:.2f}x | "
                    f"{r['max']:.2f}x |")  # fmt: skip
    if "cost" in q:
        rows += [
            "",
            "Cost per request of each side's own process (median of the runs; CPU of every "
            "thread, and bytes it wrote to disk):",
            "",
            "| side | CPU us per request | disk bytes per request |",
            "|---|---|---|",
        ]
        for side, label in _QUEUE_SIDES:
            cost = q["cost"][side]
            rows.append(f"| {label} | {cost['cpu_us']:,.0f} | {cost['disk_bytes']:,.0f} |")
    rows += [
        "",
        "Latency of a paced 1-span probe (one every 10 ms, nothing else running), client send to "
        "sink arrival:",
        "",
        "| path | p50 ms | p99 ms | probes |",
        "|---|---|---|---|",
    ]
    paths = (("direct", "client -> sink"), ("proxy", "via minimal proxy"),
             ("gateway", "via gateway"), ("gateway_queue", "via gateway --queue-dir"),
             ("gateway_queue_nofsync", "via gateway --queue-dir, no fsync"))  # fmt: skip
    for side, label in paths:
        if side not in q["latency"]:
            continue
        row = q["latency"][side]
        rows.append(f"| {label} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | {row['probes']} |")
    rows += [
        "",
        f"Added at p99 by the queue (with - without): **{q['queue_added_p99_ms']:.2f} ms**"
        + (f"; without fsync: {q['nofsync_added_p99_ms']:.2f} ms" if "nofsync_added_p99_ms" in q
           else "") + ".",
    ]  # fmt: skip
    if "fsync_ms" in q:
        rows.append(
            f"One small SQLite commit with fsync on this disk during the run: p50 "
            f"{q['fsync_ms']['p50']:.2f} ms, p99 {q['fsync_ms']['p99']:.2f} ms: the floor under "
            "the added latency with `queue_fsync` on (the default)."
        )
    rows.append("")
    return rows


if __name__ == "__main__":
    if sys.argv[1:] == ["queue"]:
        _queue_only()
    else:
        main()
