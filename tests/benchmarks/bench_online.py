"""Online evaluation: what it adds to the app's thread, and how fast the runner scores.

1. Added latency per turn. The app is a real LangChain LCEL RAG chain (keyword retriever, fake
   chat model) traced by groundwire-langchain, its spans dropped by a no-op exporter. "off" is
   that app as is; "on" adds the evaluation span processor with background evaluators
   (quoted_spans, quote_verification). The app's thread is timed with its own CPU clock
   (`time.thread_time`, what the app pays) and the wall clock (which also shows the workers
   competing for the same 2 cores). Interleaved rounds; the median round wins. An inline row
   shows the other mode: quoted_spans run on the app's thread as the root span ends.
2. Enqueue latency, with the workers busy scoring: each root span's `on_end` (what the app's
   thread does when a turn completes: one append to the span hand-off queue; a feeder thread
   assembles the turn) and each `BackgroundRunner.submit` (the turn enqueue, timed directly).
   p50 / p99 / max.
3. Evaluations per second through the runner (1 and 2 workers) vs calling the same evaluators in
   a plain loop (the peer: what `groundwire.evaluate` does); the runner also emits a carrier span
   and metric points per turn.

Run: `python -m tests.benchmarks online`. Writes results/online.{md,json}.
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

from groundwire import RagTurn, get_evaluator
from groundwire._evaluator import AnyEvaluator
from groundwire.demo import sample_turns
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor, RunnerConfig
from groundwire_langchain import LangChainInstrumentor
from tests.test_assembly_langchain import rag_chain

RESULTS = Path(__file__).parent / "results"
ROUNDS = 9
TURNS_PER_ROUND = 150
ENQUEUE_TURNS = 20_000
THROUGHPUT_TURNS = 600
QUESTIONS = ("What is the capital of France?", "Which river is longest in France?")
ANSWER = 'The context says "Paris is the capital of France" and so the answer is Paris.'


class _Drop(SpanExporter):
    """Drops spans: exporting then costs the same in every configuration."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _TimedProcessor(EvaluationSpanProcessor):
    """The evaluation processor, timing its hooks on the app's thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.root_ns: list[int] = []
        self.hook_ns = 0

    def _on_ending(self, span: Any) -> None:
        started = time.perf_counter_ns()
        super()._on_ending(span)
        self.hook_ns += time.perf_counter_ns() - started

    def on_end(self, span: ReadableSpan) -> None:
        started = time.perf_counter_ns()
        super().on_end(span)
        elapsed = time.perf_counter_ns() - started
        self.hook_ns += elapsed
        if span.parent is None:
            self.root_ns.append(elapsed)


def _evaluators() -> list[AnyEvaluator]:
    """The deterministic evaluators (quote_verification without an embedder: no cosine column)."""
    return [get_evaluator("quoted_spans"), get_evaluator("quote_verification", embedder=None)]


def _emitter() -> Emitter:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Drop()))
    return Emitter(tracer_provider=provider, meter_provider=MeterProvider([InMemoryMetricReader()]))


def _provider(processor: EvaluationSpanProcessor | None) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Drop()))
    if processor is not None:
        provider.add_span_processor(processor)
    return provider


def _percentiles(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000

    return {"p50_us": at(0.50), "p99_us": at(0.99), "max_us": ordered[-1] / 1000, "n": len(ordered)}


def _round(provider: TracerProvider, turns: int) -> tuple[float, float]:
    """Mean (CPU, wall) seconds per turn of the app's thread for one round."""
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    chain = rag_chain([ANSWER] * turns)
    try:
        cpu_started, wall_started = time.thread_time(), time.perf_counter()
        for i in range(turns):
            chain.invoke(QUESTIONS[i % 2])
        cpu, wall = time.thread_time() - cpu_started, time.perf_counter() - wall_started
    finally:
        instrumentor.uninstrument()
    return cpu / turns, wall / turns


def bench_latency() -> dict[str, Any]:
    """Per-turn app-thread time with evaluation off, on (background) and inline."""
    background = BackgroundRunner(RunnerConfig(_evaluators()), _emitter())
    on = _TimedProcessor(background, background._emitter)
    inline_runner = BackgroundRunner(
        RunnerConfig(_evaluators(), inline=frozenset({"quoted_spans"})), _emitter()
    )
    inline = _TimedProcessor(inline_runner, inline_runner._emitter)
    providers = {"off": _provider(None), "on": _provider(on), "inline": _provider(inline)}
    processors = {"on": on, "inline": inline}
    _round(providers["off"], 20)  # warm-up: imports, caches
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in providers}
    for _ in range(ROUNDS):
        for name, provider in providers.items():
            samples[name].append(_round(provider, TURNS_PER_ROUND))
            if name in processors:
                processors[name].force_flush(60_000)  # keep one round's scoring out of the next
    result: dict[str, Any] = {"rounds": ROUNDS, "turns_per_round": TURNS_PER_ROUND}
    for clock, index in (("cpu", 0), ("wall", 1)):
        medians = {
            name: statistics.median(s[index] for s in rows) for name, rows in samples.items()
        }
        off = medians["off"]
        result[clock] = {
            "median_s_per_turn": medians,
            "added_s_per_turn": {name: medians[name] - off for name in ("on", "inline")},
            "added_fraction": {name: (medians[name] - off) / off for name in ("on", "inline")},
        }
    result["root_on_end"] = _percentiles(on.root_ns)
    measured_turns = ROUNDS * TURNS_PER_ROUND
    result["hooks_s_per_turn"] = {
        name: processor.hook_ns / 1e9 / measured_turns for name, processor in processors.items()
    }
    stats = background.stats()
    result["background_turns"] = {"scored": stats.scored, "dropped": stats.dropped}
    for processor in processors.values():
        processor.shutdown()
    return result


def bench_enqueue(turns: Sequence[RagTurn]) -> dict[str, Any]:
    """`submit` latency with workers busy on the same evaluators."""
    runner = BackgroundRunner(
        RunnerConfig(_evaluators()[:1], max_queue_size=ENQUEUE_TURNS + 1), _emitter()
    )
    samples: list[int] = []
    clock = time.perf_counter_ns
    for i in range(ENQUEUE_TURNS):
        turn = turns[i % len(turns)]
        started = clock()
        runner.submit(turn)
        samples.append(clock() - started)
    runner.shutdown(120)
    stats = runner.stats()
    return {**_percentiles(samples), "scored": stats.scored, "dropped": stats.dropped}


def _throughput_turns() -> list[RagTurn]:
    base = sample_turns()
    turns = []
    for i in range(THROUGHPUT_TURNS):
        turn = base[i % len(base)]
        turns.append(
            turn.model_copy(update={"trace_id": f"{i + 1:032x}", "span_id": f"{i + 1:016x}"})
        )
    return turns


def _timed(run: Callable[[], None]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def bench_throughput(turns: Sequence[RagTurn]) -> dict[str, Any]:
    """Evaluations per second: plain loop vs the runner with 1 and 2 workers."""
    evaluators = _evaluators()
    per_turn = len(evaluators)

    def direct() -> None:
        for turn in turns:
            for evaluator in evaluators:
                evaluator.evaluate(turn)  # type: ignore[union-attr]

    rows: dict[str, Any] = {}
    seconds = _timed(direct)
    rows["direct loop"] = {"seconds": seconds, "evals_per_s": len(turns) * per_turn / seconds}
    for workers in (1, 2):
        runner = BackgroundRunner(
            RunnerConfig(evaluators, workers=workers, max_queue_size=len(turns) + 1), _emitter()
        )

        def through_runner(runner: BackgroundRunner = runner) -> None:
            for turn in turns:
                runner.submit(turn)
            runner.force_flush(600)

        seconds = _timed(through_runner)
        stats = runner.stats()
        assert stats.scored + stats.errored == len(turns), stats
        runner.shutdown(10)
        rows[f"runner, {workers} worker(s)"] = {
            "seconds": seconds,
            "evals_per_s": len(turns) * per_turn / seconds,
        }
    base = rows["direct loop"]["evals_per_s"]
    for row in rows.values():
        row["ratio_vs_direct"] = row["evals_per_s"] / base
    per_evaluator = {}
    for evaluator in evaluators:
        seconds = _timed(lambda e=evaluator: [e.evaluate(t) for t in turns])  # type: ignore[misc]
        per_evaluator[evaluator.name] = len(turns) / seconds
    return {"turns": len(turns), "rows": rows, "direct_evals_per_s_by_evaluator": per_evaluator}


def _write(result: dict[str, Any]) -> None:
    latency, enqueue, throughput = result["latency"], result["enqueue"], result["throughput"]
    cpu, wall = latency["cpu"], latency["wall"]
    lines = [
        "# Online evaluation: app-thread overhead and runner throughput",
        "",
        "App: a LangChain LCEL RAG chain (keyword retriever, fake chat model) traced by "
        "groundwire-langchain, spans dropped by a no-op exporter. off = traced only; on = plus the "
        "evaluation span processor with background `quoted_spans` + `quote_verification` (no "
        "embedder); inline = `quoted_spans` run on the app's thread as the root span ends. "
        f"{latency['rounds']} interleaved rounds of {latency['turns_per_round']} turns; medians. "
        "Target: background evaluation adds < 5% of the app's per-turn time, p99 enqueue < 50 µs.",
        "",
        "| mode | app-thread CPU µs/turn | added µs | added % | wall µs/turn | added % (wall) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in ("off", "on", "inline"):
        cpu_ms = cpu["median_s_per_turn"][name] * 1e6
        wall_ms = wall["median_s_per_turn"][name] * 1e6
        if name == "off":
            lines.append(f"| {name} | {cpu_ms:,.0f} | - | - | {wall_ms:,.0f} | - |")
        else:
            lines.append(
                f"| {name} | {cpu_ms:,.0f} | {cpu['added_s_per_turn'][name] * 1e6:,.1f} | "
                f"**{cpu['added_fraction'][name] * 100:.1f}%** | {wall_ms:,.0f} | "
                f"{wall['added_fraction'][name] * 100:.1f}% |"
            )
    root = latency["root_on_end"]
    off_cpu = cpu["median_s_per_turn"]["off"]
    hooks = latency["hooks_s_per_turn"]
    lines += [
        "",
        "Time inside groundwire's span-processor hooks on the app's thread (timed around each "
        "call; the rest of the added CPU time is the background threads contending for the GIL "
        "and the 2 cores): "
        + ", ".join(
            f"{name} {hooks[name] * 1e6:,.1f} µs/turn ({hooks[name] / off_cpu * 100:.1f}%)"
            for name in ("on", "inline")
        )
        + ".",
        "",
        "| enqueue step | p50 µs | p99 µs | max µs | samples |",
        "|---|---:|---:|---:|---:|",
        f"| `BackgroundRunner.submit` (turn enqueue) | {enqueue['p50_us']:.1f} | "
        f"**{enqueue['p99_us']:.1f}** | {enqueue['max_us']:,.0f} | {enqueue['n']:,} |",
        f"| root span `on_end` (span hand-off) | {root['p50_us']:.1f} | "
        f"**{root['p99_us']:.1f}** | {root['max_us']:,.0f} | {root['n']:,} |",
        "",
        f"Throughput on {throughput['turns']} demo turns (evaluations per second; the runner also "
        "emits one carrier span and the metric points per turn):",
        "",
        "| path | seconds | evaluations/s | ratio vs direct loop |",
        "|---|---:|---:|---:|",
    ]
    for name, row in throughput["rows"].items():
        lines.append(
            f"| {name} | {row['seconds']:.2f} | {row['evals_per_s']:,.0f} | "
            f"{row['ratio_vs_direct']:.2f}x |"
        )
    by_evaluator = ", ".join(
        f"`{name}` {rate:,.0f} turns/s"
        for name, rate in throughput["direct_evals_per_s_by_evaluator"].items()
    )
    meta = result["meta"]
    lines += [
        "",
        f"Direct rate per evaluator: {by_evaluator}. Python {meta['python']} on "
        f"{meta['machine']}, {meta['cpus']} CPUs shared with other work; run took "
        f"{meta['seconds']:.1f} s. Raw numbers: `online.json`.",
        "",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "online.md").write_text("\n".join(lines))
    (RESULTS / "online.json").write_text(json.dumps(result, indent=2))


def main() -> None:
    """Run the three measurements and write results/online.{md,json}."""
    import os

    started = time.perf_counter()
    turns = _throughput_turns()
    result: dict[str, Any] = {
        "latency": bench_latency(),
        "enqueue": bench_enqueue(turns),
        "throughput": bench_throughput(turns),
    }
    result["meta"] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "seconds": time.perf_counter() - started,
    }
    _write(result)
    print((RESULTS / "online.md").read_text())


if __name__ == "__main__":
    main()
