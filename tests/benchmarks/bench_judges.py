"""Judge throughput and memory: groundedness turns per second against a 200 ms judge server.

The local `groundwire.testing.OpenAIServer` answers every chat completion after a fixed 200 ms; it
runs in its own process (as a real judge server would), so its threads do not share our GIL.
With a concurrency limit of 16 calls and 2 judge calls per turn, the ideal is
16 / 0.2 s / 2 = 40 turns per second; the target is 90% of it. Peers in the same run: the bare
async openai client making the same two calls per turn under the same limit (the floor of our
overhead), and single-turn latency against the reference's sequential judge order (Ragas asks
judge 1, then judge 2; we ask both at once). Memory: tracemalloc over 2,000 turns must stay flat.

Run: `python -m tests.benchmarks judges`. Writes results/judges.{md,json}.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai

from groundwire import RagTurn
from groundwire._evaluator import arun_evaluator
from groundwire.evaluators.groundedness import ResponseGroundedness
from groundwire.judges import JudgeClient, JudgeConfig
from groundwire.judges._prompts import groundedness_messages
from tests.benchmarks._timing import environment, results_dir, scaled

RESULTS = results_dir()
LATENCY_S = 0.2
CONCURRENCY = 16
CALLS_PER_TURN = 2
TURNS = scaled(1_000, 40)
"""Timed turns on each side (groundwire and the bare client), each on a fresh server."""
WARMUP_TURNS = scaled(64, 8)
"""Untimed turns each side runs first on its server (connections, imports, caches)."""
TRACED_TURNS = scaled(1_000, 40)
PEER_TURNS = TURNS
LATENCY_TURNS = scaled(15, 3)
CHECKPOINT = scaled(250, 10)
IDEAL = CONCURRENCY / LATENCY_S / CALLS_PER_TURN
CONTEXT = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris. It was "
    "completed in 1889 as the entrance arch to the World's Fair."
)


def _turns(count: int) -> Iterator[RagTurn]:
    """`count` distinct turns (distinct answers, so no cache could help)."""
    for i in range(count):
        answer = f"The Eiffel Tower (turn {i}) is in Paris and was completed in 1889."
        yield RagTurn(query=f"Where is the tower? ({i})", contexts=[CONTEXT], answer=answer)


_SERVER = """
import sys, time
from groundwire.testing import OpenAIServer, structured
server = OpenAIServer(structured({"rating": 2}, delay_s=float(sys.argv[1]))).start()
server.record_requests = False
print(server.port, flush=True)
sys.stdin.read()  # serve until the parent closes our stdin
print(server.request_count, server.max_in_flight, flush=True)
"""


@contextmanager
def _server(delay_s: float) -> Iterator[tuple[str, dict[str, int]]]:
    """Run the scripted server in a child process; yields its base URL and, after exit, stats."""
    child = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(delay_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    stats: dict[str, int] = {}
    try:
        port = int(child.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1", stats
    finally:
        child.stdin.close()
        line = child.stdout.readline().split()
        if line:
            stats["requests"], stats["max_in_flight"] = int(line[0]), int(line[1])
        child.wait(timeout=10)


def _evaluator(base_url: str) -> ResponseGroundedness:
    """A groundedness evaluator with the benchmark's judge config (limit 16, cache off)."""
    config = JudgeConfig(
        model="bench",
        base_url=base_url,
        api_key="bench",
        max_concurrency=CONCURRENCY,
        cache="off",
        timeout_s=10.0,
    )
    return ResponseGroundedness(judge=JudgeClient(config))


def _rss_mib() -> float:
    """Resident set size of this process (Linux), MiB; 0 where /proc is missing."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


async def _drive(
    evaluator: ResponseGroundedness, count: int, memory: list[dict[str, float]], traced: bool
) -> tuple[float, float]:
    """Score `count` turns with 2 x CONCURRENCY turns in flight, noting memory every CHECKPOINT
    turns (traced: tracemalloc after a collection; else RSS, which costs nothing to read).
    Returns (wall seconds, CPU seconds)."""
    for turn in _turns(WARMUP_TURNS):
        await arun_evaluator(evaluator, turn)
    turns = iter(enumerate(_turns(count), start=1))
    failures = 0

    async def worker() -> None:
        nonlocal failures
        for done, turn in turns:
            outcome = await arun_evaluator(evaluator, turn)
            if outcome.score.value != 1.0:
                failures += 1
            if done % CHECKPOINT == 0:
                if traced:
                    gc.collect()
                    memory.append(
                        {"turns": done, "mib": tracemalloc.get_traced_memory()[0] / 2**20}
                    )
                else:
                    memory.append({"turns": done, "mib": _rss_mib()})

    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(2 * CONCURRENCY)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    if failures:
        raise RuntimeError(f"{failures} turns did not score 1.0: the benchmark is broken")
    return elapsed, cpu


async def _drive_peer(base_url: str, count: int) -> tuple[float, float]:
    """The same two calls per turn through the bare async openai client, same limit."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    limit = asyncio.Semaphore(CONCURRENCY)
    turns = iter(_turns(count))

    async def call(messages: list[dict[str, str]]) -> None:
        async with limit:
            await client.chat.completions.create(
                model="bench",
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
            )

    async def worker() -> None:
        for turn in turns:
            context = "\n".join(turn.context_texts)
            await asyncio.gather(
                *(call(groundedness_messages(j, turn.answer, context)) for j in range(2))
            )

    turns = iter(_turns(WARMUP_TURNS))
    await asyncio.gather(*(worker() for _ in range(2 * CONCURRENCY)))
    turns = iter(_turns(count))
    started, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(worker() for _ in range(2 * CONCURRENCY)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    await client.close()
    return elapsed, cpu


async def _latencies(base_url: str) -> tuple[list[float], list[float]]:
    """Single-turn latency: ours (judges concurrent) vs the reference's order (sequential)."""
    evaluator = _evaluator(base_url)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    ours: list[float] = []
    sequential: list[float] = []
    for turn in _turns(LATENCY_TURNS):
        started = time.perf_counter()
        await evaluator.aevaluate(turn)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        for judge in range(2):
            messages = groundedness_messages(judge, turn.answer, "\n".join(turn.context_texts))
            await client.chat.completions.create(
                model="bench",
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
            )
        sequential.append(time.perf_counter() - started)
    await client.close()
    return ours, sequential


def main() -> None:
    """Run the latency, peer, throughput and memory phases; write results/judges.{md,json}."""
    with _server(LATENCY_S) as (base_url, _):
        ours_latency, sequential_latency = asyncio.run(_latencies(base_url))
    with _server(LATENCY_S) as (base_url, _):
        peer_s, peer_cpu = asyncio.run(_drive_peer(base_url, PEER_TURNS))
        print(f"peer: {PEER_TURNS / peer_s:.1f} turns/s", flush=True)
    rss: list[dict[str, float]] = []
    with _server(LATENCY_S) as (base_url, stats):
        ours_s, ours_cpu = asyncio.run(_drive(_evaluator(base_url), TURNS, rss, traced=False))
        print(f"ours: {TURNS / ours_s:.1f} turns/s", flush=True)
    traced: list[dict[str, float]] = []
    with _server(LATENCY_S) as (base_url, _):
        tracemalloc.start()
        try:
            traced_s, _ = asyncio.run(_drive(_evaluator(base_url), TRACED_TURNS, traced, True))
        finally:
            tracemalloc.stop()
    ours_tps, peer_tps = TURNS / ours_s, PEER_TURNS / peer_s
    calls, peer_calls = TURNS * CALLS_PER_TURN, PEER_TURNS * CALLS_PER_TURN
    result: dict[str, Any] = {
        "latency_s": LATENCY_S,
        "concurrency": CONCURRENCY,
        "calls_per_turn": CALLS_PER_TURN,
        "ideal_turns_per_s": IDEAL,
        "turns": TURNS,
        "ours_seconds": ours_s,
        "ours_turns_per_s": ours_tps,
        "ours_vs_ideal": ours_tps / IDEAL,
        "ours_cpu_ms_per_call": 1000 * ours_cpu / calls,
        "server_max_in_flight": stats.get("max_in_flight"),
        "peer_turns": PEER_TURNS,
        "peer_turns_per_s": peer_tps,
        "peer_vs_ideal": peer_tps / IDEAL,
        "peer_cpu_ms_per_call": 1000 * peer_cpu / peer_calls,
        "ours_vs_bare_openai": ours_tps / peer_tps,
        "turn_latency_ours_median_s": statistics.median(ours_latency),
        "turn_latency_sequential_median_s": statistics.median(sequential_latency),
        "rss_checkpoints": rss,
        "warmup_turns": WARMUP_TURNS,
        "rss_growth_mib_500_to_end": rss[-1]["mib"] - rss[1]["mib"],
        "traced_turns": TRACED_TURNS,
        "traced_checkpoints": traced,
        "traced_growth_mib_500_to_end": traced[-1]["mib"] - traced[1]["mib"],
        "traced_phase_turns_per_s": TRACED_TURNS / traced_s,
        "load_average_1m": os.getloadavg()[0],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "openai": openai.__version__,
        "environment": environment(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "judges.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "judges.md").write_text(_markdown(result))
    print(_markdown(result))


def _markdown(r: dict[str, Any]) -> str:
    """The results page."""
    measures = [
        (f"groundwire turns/s ({r['turns']:,} turns)", f"{r['ours_turns_per_s']:.1f}"),
        ("**groundwire vs ideal** (target >= 0.90)", f"**{r['ours_vs_ideal']:.3f}**"),
        ("groundwire CPU per judge call", f"{r['ours_cpu_ms_per_call']:.2f} ms"),
        (
            f"bare async openai client, same calls and limit ({r['peer_turns']:,} turns), turns/s",
            f"{r['peer_turns_per_s']:.1f}",
        ),
        ("bare openai client vs ideal", f"{r['peer_vs_ideal']:.3f}"),
        ("bare openai client CPU per call", f"{r['peer_cpu_ms_per_call']:.2f} ms"),
        ("groundwire vs bare openai client", f"{r['ours_vs_bare_openai']:.3f}"),
        ("server's most concurrent requests (groundwire run)", str(r["server_max_in_flight"])),
        (
            "single-turn latency, ours (judges concurrent), median",
            f"{r['turn_latency_ours_median_s']:.3f} s",
        ),
        (
            "single-turn latency, reference order (judge 1 then judge 2), median",
            f"{r['turn_latency_sequential_median_s']:.3f} s",
        ),
        (
            f"RSS growth, turn {2 * CHECKPOINT} -> {r['turns']:,}",
            f"{r['rss_growth_mib_500_to_end']:+.2f} MiB",
        ),
        (
            f"tracemalloc growth, turn {2 * CHECKPOINT} -> {r['traced_turns']:,}",
            f"{r['traced_growth_mib_500_to_end']:+.3f} MiB",
        ),
        ("load average (1 min) at the end, cores", f"{r['load_average_1m']:.1f}, {r['cpus']}"),
    ]
    table = "\n".join(f"| {name} | {value} |" for name, value in measures)
    rss = " ".join(f"{m['mib']:.1f}" for m in r["rss_checkpoints"])
    traced = " ".join(f"{m['mib']:.2f}" for m in r["traced_checkpoints"])
    return f"""# Judge throughput and memory (`groundedness`, 2 judge calls per turn)

A local OpenAI-compatible server (own process) answers every call after
{r["latency_s"] * 1000:.0f} ms; the concurrency limit is {r["concurrency"]} calls, so the ideal is
{r["concurrency"]} / {r["latency_s"]} s / {r["calls_per_turn"]} calls =
**{r["ideal_turns_per_s"]:.0f} turns/s**. Python {r["python"]}, openai {r["openai"]}.
Fairness: groundwire and the bare client each score {r["turns"]:,} timed turns on a fresh server
after the same {r["warmup_turns"]} untimed warm-up turns on it.
Run: `python -m tests.benchmarks judges`.

| measure | value |
|---|---|
{table}

At the ideal rate the client needs (CPU per call x {r["ideal_turns_per_s"] * 2:.0f} calls/s) of one
core; when the machine is shared and busy (see the load average) the client is CPU-starved and
falls short of the ideal for that reason alone. The bare client, measured in the same run, shows
how much of the shortfall is the machine rather than groundwire.

Memory every {CHECKPOINT} turns (cache off; the in-memory cache, when on, grows up to its
`cache_size` bound by design). RSS MiB over the {r["turns"]:,}-turn throughput run: {rss}.
tracemalloc MiB (after `gc.collect()`) over a separate {r["traced_turns"]:,}-turn run: {traced}.
"""


if __name__ == "__main__":
    main()
