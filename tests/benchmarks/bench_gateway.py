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
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks import _gateway_load as traffic
from tests.benchmarks import _gateway_processes as procs
from tests.benchmarks import _gateway_report as report
from tests.benchmarks._timing import results_dir, scaled, smoke

RESULTS = results_dir()
ROOT = Path(__file__).resolve().parents[2]
RUNS = scaled(3, 1)
WARMUP_S = 0.2 if smoke() else 1.0
DURATION_S = 0.5 if smoke() else 5.0
CONCURRENCY = 16
SPANS_PER_REQUEST = 50
LATENCY_S = 1.0 if smoke() else 10.0
RATE_S = 1.0 if smoke() else 8.0
MEMORY_S = 2.0 if smoke() else 60.0
SATURATE_RATE = 1500.0
"""Traces per second posted for 2 s to fill the scoring queues before measuring the rate."""
FEED_FACTOR = 4.0
FEED_CAP = 1000.0


def _throughput_cost(front: procs.Process, body: bytes) -> tuple[float, float, float]:
    """Spans per second through `front` (after WARMUP_S), and its CPU microseconds and bytes
    written to disk per request meanwhile (less sensitive to other load than spans/s)."""
    url = front.url + "/v1/traces"
    asyncio.run(traffic.closed_loop(url, body, WARMUP_S, CONCURRENCY))
    cpu, written = traffic.process_cost(front.process.pid)
    started = time.monotonic()
    done = asyncio.run(traffic.closed_loop(url, body, DURATION_S, CONCURRENCY))
    elapsed = time.monotonic() - started
    cpu_after, written_after = traffic.process_cost(front.process.pid)
    per = max(done, 1)
    return (
        done * SPANS_PER_REQUEST / elapsed,
        (cpu_after - cpu) / per * 1e6,
        (written_after - written) / per,
    )


def _throughput(url: str, body: bytes) -> float:
    """Spans per second through `url` (after WARMUP_S)."""
    asyncio.run(traffic.closed_loop(url + "/v1/traces", body, WARMUP_S, CONCURRENCY))
    started = time.monotonic()
    done = asyncio.run(traffic.closed_loop(url + "/v1/traces", body, DURATION_S, CONCURRENCY))
    return done * SPANS_PER_REQUEST / (time.monotonic() - started)


def _queue_part(tmp: Path) -> dict[str, Any]:
    """Part 5: the gateway with `--queue-dir` vs without vs the minimal proxy."""
    body = traffic.batch(SPANS_PER_REQUEST)
    with contextlib.ExitStack() as started:  # whatever started is stopped, even half-way
        sink = started.enter_context(procs.sink(tmp, record=True))
        proxy = started.enter_context(procs.role("proxy", tmp, sink.url))
        memory = started.enter_context(procs.gateway(tmp, sink.url))
        queued = started.enter_context(
            procs.gateway(tmp, sink.url, "--queue-dir", str(tmp / f"queue-{time.monotonic_ns()}"))
        )
        unsynced = started.enter_context(
            procs.gateway(
                tmp,
                sink.url,
                "--queue-dir",
                str(tmp / f"queue-{time.monotonic_ns()}"),
                config={"queue_fsync": False},
            )
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
        for _ in range(RUNS):
            for side, front in fronts.items():
                rate, cpu_us, written = _throughput_cost(front, body)
                runs[side].append(rate)
                costs[side].append((cpu_us, written))
            print("queue throughput run: " + ", ".join(
                f"{side} {values[-1]:.0f}" for side, values in runs.items()) + " spans/s",
                flush=True)  # fmt: skip
        for side, front in (("direct", sink), *fronts.items()):
            asyncio.run(traffic.probe_and_feed(front.url, WARMUP_S, 0.0, seed=2))
            sent, _, _ = asyncio.run(traffic.probe_and_feed(front.url, LATENCY_S, 0.0))
            time.sleep(0.5)
            values = traffic.latencies(sink, sent)
            latency[side] = {
                "p50_ms": traffic.pct(values, 0.50),
                "p99_ms": traffic.pct(values, 0.99),
                "probes": len(values),
            }
            print(f"queue latency {side}: {latency[side]}", flush=True)
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
    return {"p50": traffic.pct(times, 0.50), "p99": traffic.pct(times, 0.99)}


def _queue_only() -> None:
    """Run part 5 alone; its section of results/gateway.{json,md} is replaced."""
    path = RESULTS / "gateway.json"
    if not path.is_file():
        raise SystemExit(f"{path} is missing: run `python -m tests.benchmarks gateway` first")
    out = json.loads(path.read_text())
    out["queue"] = _queue_part(Path(tempfile.mkdtemp(prefix="bench-gateway-")))
    path.write_text(json.dumps(out, indent=2) + "\n")
    (RESULTS / "gateway.md").write_text(
        report.markdown(out, feed_factor=FEED_FACTOR, rate_s=RATE_S)
    )
    print("\n".join(report.queue_markdown(out["queue"])))


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
    sink = procs.sink(tmp, record=False)
    scoring: dict[str, Any] = {}
    try:
        gateway = procs.gateway(tmp, sink.url, config=_EVAL_CONFIG)
        try:
            asyncio.run(traffic.paced(gateway.url, SATURATE_RATE, 2.0))
            health = procs.get(gateway.url + "/healthz")
            before = health["turns"].get("scored", 0) + health["turns"].get("errored", 0)
            started = time.monotonic()
            time.sleep(RATE_S)  # the queues are full: the runner scores flat out meanwhile
            health = procs.get(gateway.url + "/healthz")
            after = health["turns"].get("scored", 0) + health["turns"].get("errored", 0)
            rate = max(1.0, (after - before) / (time.monotonic() - started))
        finally:
            gateway.stop()
        scoring["turns_per_s_one_worker"] = rate
        for factor in (1, 2, 4):
            gateway = procs.gateway(tmp, sink.url, config=_EVAL_CONFIG)
            try:
                seconds = MEMORY_S if factor == 1 else RATE_S
                rss: list[float] = []
                asyncio.run(_feed_and_sample(gateway, rate * factor, seconds, rss))
                health = traffic.wait_drained(gateway)
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
    target: procs.Process, per_s: float, seconds: float, samples: list[float]
) -> int:
    """Feed RAG traces at `per_s` while sampling the gateway's RSS every 5 s."""
    task = asyncio.create_task(traffic.paced(target.url, per_s, seconds))
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
            "probe_interval_s": traffic.PROBE_INTERVAL_S, "latency_s": LATENCY_S,
            "memory_s": MEMORY_S,
        },
    }  # fmt: skip
    body = traffic.batch(SPANS_PER_REQUEST)
    out["settings"]["request_bytes"] = len(body)

    # 1. throughput, evaluation off
    runs: dict[str, list[float]] = {"proxy": [], "gateway": []}
    with contextlib.ExitStack() as started:
        sink = started.enter_context(procs.sink(tmp, record=False))
        proxy = started.enter_context(procs.role("proxy", tmp, sink.url))
        gateway = started.enter_context(procs.gateway(tmp, sink.url))
        for _ in range(RUNS):
            runs["proxy"].append(_throughput(proxy.url, body))
            runs["gateway"].append(_throughput(gateway.url, body))
            print(f"throughput run: proxy {runs['proxy'][-1]:.0f}, "
                  f"gateway {runs['gateway'][-1]:.0f} spans/s", flush=True)  # fmt: skip
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
        sink = procs.sink(tmp, record=True)
        front: procs.Process | None = None
        try:
            if side == "proxy":
                front = procs.role("proxy", tmp, sink.url)
            elif config is not None:
                front = procs.gateway(tmp, sink.url, config=config or None)
            url = front.url if front is not None else sink.url
            # the same warm-up on every side (first connections, first decodes), then measure
            _, warm_spans, warm_turns = asyncio.run(
                traffic.probe_and_feed(url, WARMUP_S, feed, seed=2)
            )
            sent, accepted, turns = asyncio.run(traffic.probe_and_feed(url, LATENCY_S, feed))
            accepted, turns = accepted + warm_spans, turns + warm_turns
            health = traffic.wait_drained(front) if front is not None and config else {}
            time.sleep(1.0)
            values = traffic.latencies(sink, sent)
            stats = procs.get(sink.url + "/stats")
            latency[side] = {
                "p50_ms": traffic.pct(values, 0.50), "p99_ms": traffic.pct(values, 0.99),
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
    (RESULTS / "gateway.md").write_text(
        report.markdown(out, feed_factor=FEED_FACTOR, rate_s=RATE_S)
    )
    print(report.markdown(out, feed_factor=FEED_FACTOR, rate_s=RATE_S))


if __name__ == "__main__":
    if sys.argv[1:] == ["queue"]:
        _queue_only()
    else:
        main()
