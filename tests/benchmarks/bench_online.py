"""Online evaluation: what it adds to the app's thread, and how fast the runner scores.

1. Added latency per turn. The app is a real LangChain LCEL RAG chain (keyword retriever, fake
   chat model) traced by groundwire-langchain, its spans dropped by a no-op exporter. "off" is
   that app as is; "on" adds the evaluation span processor with background evaluators
   (quoted_spans, quote_verification). The app's thread is timed with its own CPU clock
   (`time.thread_time`, what the app pays) and the wall clock (which also shows the workers
   competing for the same 2 cores), and the whole process's CPU clock (`time.process_time`, over
   the round and the wait until its turns are scored: what scoring costs the machine in all).
   Interleaved rounds; the median round wins. An inline row shows the other mode: quoted_spans
   run on the app's thread as the root span ends.
2. Enqueue latency, with the workers busy scoring: `EvaluationSpanProcessor.on_end` on every
   span, and on root spans alone (what the app's thread does when a span or a turn completes: one
   append to the span hand-off queue; a feeder thread assembles the turn), and each
   `BackgroundRunner.submit` (the turn enqueue, timed directly). p50 / p99 / max.
3. Evaluations per second through the runner (1 and 2 workers) vs calling the same evaluators in
   a plain loop (the peer: what `groundwire.evaluate` does); the runner also emits a carrier span
   and metric points per turn.
4. Keep-up (issue 34, `_keep_up.py`): turns per second one worker scores with the README's
   `configure()` evaluators as the README configures them, and named without options (default
   e5 embedder), with the fast `WordLlamaEmbedder` and with none, on turns that quote their
   contexts; and whether it keeps up with a turn every 25 ms.

Run: `python -m tests.benchmarks online`. Writes results/online.{md,json}.
`python -m tests.benchmarks.bench_online keep-up` measures part 4 alone and replaces it in the
existing results (the other parts keep their earlier run; the section says its own load).
"""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
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
from tests.benchmarks._keep_up import bench_keep_up, keep_up_lines
from tests.benchmarks._timing import environment, results_dir, scaled
from tests.test_assembly_langchain import KeywordRetriever

RESULTS = results_dir()
ROUNDS = scaled(11, 1)
TURNS_PER_ROUND = scaled(150, 5)
ENQUEUE_TURNS = scaled(20_000, 200)
THROUGHPUT_TURNS = scaled(600, 20)
MODEL_LATENCY_S = 0.02
QUESTIONS = ("What is the capital of France?", "Which river is longest in France?")
ANSWER = 'The context says "Paris is the capital of France" and so the answer is Paris.'


class _Drop(SpanExporter):
    """Drops spans: exporting then costs the same in every configuration."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Drop the batch."""
        return SpanExportResult.SUCCESS


class _TimedProcessor(EvaluationSpanProcessor):
    """The evaluation processor, timing its hooks on the app's thread."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.root_ns: list[int] = []
        self.all_ns: list[int] = []
        self.hook_ns = 0

    def _on_ending(self, span: Any) -> None:
        """Time the inline hook."""
        started = time.perf_counter_ns()
        super()._on_ending(span)
        self.hook_ns += time.perf_counter_ns() - started

    def on_end(self, span: ReadableSpan) -> None:
        """Time the hand-off hook (and keep root spans' times)."""
        started = time.perf_counter_ns()
        super().on_end(span)
        elapsed = time.perf_counter_ns() - started
        self.hook_ns += elapsed
        self.all_ns.append(elapsed)
        if span.parent is None:
            self.root_ns.append(elapsed)


def _evaluators() -> list[AnyEvaluator]:
    """The deterministic evaluators (quote_verification without an embedder: no cosine column)."""
    return [get_evaluator("quoted_spans"), get_evaluator("quote_verification", embedder=None)]


def _emitter() -> Emitter:
    """An Emitter whose spans are dropped and metrics kept in memory."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Drop()))
    return Emitter(tracer_provider=provider, meter_provider=MeterProvider([InMemoryMetricReader()]))


def _provider(processor: EvaluationSpanProcessor | None) -> TracerProvider:
    """A tracer provider dropping spans, with `processor` added when given."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Drop()))
    if processor is not None:
        provider.add_span_processor(processor)
    return provider


def _percentiles(samples_ns: list[int]) -> dict[str, float]:
    """p50 / p99 / max in microseconds of nanosecond samples."""
    ordered = sorted(samples_ns)

    def at(q: float) -> float:
        """The sample at quantile `q`, in microseconds."""
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000

    return {"p50_us": at(0.50), "p99_us": at(0.99), "max_us": ordered[-1] / 1000, "n": len(ordered)}


def _chain(turns: int, model_latency_s: float) -> Runnable[str, str]:
    """The tests' LCEL RAG chain, its fake chat model answering after `model_latency_s`."""
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    model = FakeListChatModel(responses=[ANSWER] * turns, sleep=model_latency_s or None)
    join = RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs))
    setup = {"context": KeywordRetriever() | join, "question": RunnablePassthrough()}
    return setup | prompt | model | StrOutputParser()


def _round(
    provider: TracerProvider,
    turns: int,
    model_latency_s: float = 0.0,
    settle: Callable[[], object] | None = None,
) -> tuple[float, float, float]:
    """Mean seconds per turn of one round: app-thread CPU, wall, and whole-process CPU.

    The process clock also covers `settle` (waiting until the round's turns are scored), so
    background scoring done after the app's last turn is counted too.
    """
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    chain = _chain(turns, model_latency_s)
    try:
        process_started = time.process_time()
        cpu_started, wall_started = time.thread_time(), time.perf_counter()
        for i in range(turns):
            chain.invoke(QUESTIONS[i % 2])
        cpu, wall = time.thread_time() - cpu_started, time.perf_counter() - wall_started
        if settle is not None:
            settle()
        process = time.process_time() - process_started
    finally:
        instrumentor.uninstrument()
    return cpu / turns, wall / turns, process / turns


def _processor(inline: bool, timed: bool = False) -> EvaluationSpanProcessor:
    """An evaluation processor with the deterministic evaluators (inline or not)."""
    names = frozenset({"quoted_spans"}) if inline else frozenset()
    runner = BackgroundRunner(RunnerConfig(_evaluators(), inline=names), _emitter())
    kind = _TimedProcessor if timed else EvaluationSpanProcessor
    return kind(runner, runner._emitter)


def bench_latency(
    model_latency_s: float = 0.0, rounds: int = ROUNDS, turns_per_round: int = TURNS_PER_ROUND
) -> dict[str, Any]:
    """Per-turn app-thread time with evaluation off, on (background) and inline.

    The timed rounds use the plain processor; a separate pass with a timing subclass measures
    the hooks themselves (its own timing calls would otherwise inflate the "on" numbers).
    """
    processors = {"on": _processor(inline=False), "inline": _processor(inline=True)}
    providers = {"off": _provider(None), **{k: _provider(p) for k, p in processors.items()}}
    _round(providers["off"], 20)  # warm-up: imports, caches
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in providers}
    for _ in range(rounds):
        for name, provider in providers.items():
            processor = processors.get(name)
            # Waiting for the round's scoring keeps it out of the next round, and inside this
            # round's whole-process CPU.
            settle = (lambda p=processor: p.force_flush(60_000)) if processor else None
            samples[name].append(_round(provider, turns_per_round, model_latency_s, settle))
    result: dict[str, Any] = {
        "rounds": rounds,
        "turns_per_round": turns_per_round,
        "model_latency_s": model_latency_s,
    }
    for clock, index in (("cpu", 0), ("wall", 1), ("process_cpu", 2)):
        medians = {
            name: statistics.median(s[index] for s in rows) for name, rows in samples.items()
        }
        off = medians["off"]
        added = {  # median of the paired per-round differences: robust to drift between rounds
            name: statistics.median(
                mode[index] - base[index]
                for mode, base in zip(samples[name], samples["off"], strict=True)
            )
            for name in ("on", "inline")
        }
        result[clock] = {
            "median_s_per_turn": medians,
            "added_s_per_turn": added,
            "added_fraction": {name: added[name] / off for name in ("on", "inline")},
        }
    stats = processors["on"].runner.stats()
    result["background_turns"] = {"scored": stats.scored, "dropped": stats.dropped}
    timed = {"on": _processor(inline=False, timed=True), "inline": _processor(True, timed=True)}
    hook_turns = 3 * turns_per_round
    for processor in timed.values():
        for _ in range(3):
            _round(_provider(processor), turns_per_round, model_latency_s)
            processor.force_flush(60_000)
    on = timed["on"]
    assert isinstance(on, _TimedProcessor)
    result["root_on_end"] = _percentiles(on.root_ns)
    result["on_end"] = _percentiles(on.all_ns)
    result["hooks_s_per_turn"] = {
        name: cast(_TimedProcessor, p).hook_ns / 1e9 / hook_turns for name, p in timed.items()
    }
    for processor in [*processors.values(), *timed.values()]:
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
    """The demo turns repeated, each in its own trace."""
    base = sample_turns()
    turns = []
    for i in range(THROUGHPUT_TURNS):
        turn = base[i % len(base)]
        turns.append(
            turn.model_copy(update={"trace_id": f"{i + 1:032x}", "span_id": f"{i + 1:016x}"})
        )
    return turns


def _timed(run: Callable[[], None]) -> float:
    """Seconds `run` took."""
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def bench_throughput(turns: Sequence[RagTurn]) -> dict[str, Any]:
    """Evaluations per second: plain loop vs the runner with 1 and 2 workers."""
    evaluators = _evaluators()
    per_turn = len(evaluators)

    def direct() -> None:
        """The peer: call each evaluator on each turn in a plain loop."""
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
            """Submit every turn and wait until all are scored."""
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


TAIL_TURNS = scaled(600, 10)
TAIL_WARMUP_TURNS = scaled(20, 2)
TAIL_RUNS = scaled(3, 1)
TAIL_MODES = (
    "bare",
    "capture-only, Python's 5 ms",
    "capture-only",
    "background threads",
    "worker process",
)
"""capture-only runs at the thread switch interval configure() sets (1 ms) so that the ratio
compares equal conditions; "capture-only, Python's 5 ms" is the app as it ran before groundwire
(the interval alone shortens its tail, so both are shown)."""
TAIL_APP = """
import json, os, socket, sys, time
mode, turns, warmup = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
from tests.benchmarks.bench_online import MODEL_LATENCY_S, QUESTIONS, _chain
chain = _chain(turns + warmup, MODEL_LATENCY_S)
configured = time.perf_counter()
if mode.startswith("capture-only"):
    from opentelemetry.sdk.resources import Resource
    from groundwire.exporters._providers import ExporterChoice, build_tracer_provider
    from groundwire_langchain import LangChainInstrumentor
    provider = build_tracer_provider(Resource.create({}), ExporterChoice("otlp"))
    LangChainInstrumentor().instrument(tracer_provider=provider)
    import gc
    gc.freeze()  # as configure() does: the same GC treatment on both sides
    if mode == "capture-only":  # configure()'s default interval: equal conditions
        from groundwire._switch import DEFAULT_SWITCH_INTERVAL_S
        sys.setswitchinterval(DEFAULT_SWITCH_INTERVAL_S)
elif mode in ("background threads", "worker process"):
    import groundwire
    groundwire.configure(
        evaluators=["quoted_spans", "quote_verification"],
        instrument=["langchain"],
        executor="process" if mode == "worker process" else "threads",
    )
    time.sleep(3.0 if mode == "worker process" else 0.0)  # its warm-up runs in the background
configured = time.perf_counter() - configured
samples = []
for i in range(turns + warmup):
    started = time.perf_counter()
    chain.invoke(QUESTIONS[i % 2])
    samples.append(time.perf_counter() - started)
first = samples[:warmup]
samples = sorted(samples[warmup:])
ended = time.perf_counter()
scored = errored = dropped = 0
if mode.startswith("capture-only"):
    provider.shutdown()
elif mode != "bare":
    from groundwire._configure import get_online
    online = get_online()
    groundwire.shutdown(5)
    stats = online.stats()
    scored, errored, dropped = stats.scored, stats.errored, stats.dropped
print(json.dumps({
    "p50_ms": samples[len(samples) // 2] * 1e3,
    "p99_ms": samples[min(len(samples) - 1, int(0.99 * len(samples)))] * 1e3,
    "max_ms": samples[-1] * 1e3,
    "first_turns_max_ms": max(first) * 1e3,
    "configure_s": configured,
    "shutdown_s": time.perf_counter() - ended,
    "scored": scored, "errored": errored, "dropped": dropped,
}))
"""


def _tail_run(mode: str, endpoint: str) -> dict[str, float]:
    """One app process: its per-turn latency percentiles (after the warm-up turns)."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    env["PYTHONPATH"] = os.pathsep.join(
        str(root / p) for p in ("", "src", "integrations/langchain/src")
    )
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
    env["OTEL_BSP_SCHEDULE_DELAY"] = "1000"
    done = subprocess.run(
        [sys.executable, "-c", TAIL_APP, mode, str(TAIL_TURNS), str(TAIL_WARMUP_TURNS)],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{mode}: {done.stderr[-2000:]}")
    return cast(dict[str, float], json.loads(done.stdout.strip().splitlines()[-1]))


def bench_tail() -> dict[str, Any]:
    """p50/p99/max turn latency of the app (20 ms model) in separate processes: bare (no
    groundwire), capture-only (groundwire-langchain spans over OTLP, no evaluators) and
    background threads (configure() with quoted_spans + quote_verification), with the Collector
    up (a real OTLP receiver) and down (a port that refuses). Runs interleaved; medians."""
    import socket

    from groundwire.testing import OtlpHttpReceiver

    refusing = socket.socket()
    refusing.bind(("127.0.0.1", 0))
    down = f"http://127.0.0.1:{refusing.getsockname()[1]}"
    rows: dict[str, list[dict[str, float]]] = {}
    with OtlpHttpReceiver() as receiver:
        for _ in range(TAIL_RUNS):
            for collector, endpoint in (("up", receiver.endpoint), ("down", down)):
                for mode in TAIL_MODES:
                    if mode == "bare" and collector == "down":
                        continue  # no telemetry: the collector does not matter
                    rows.setdefault(f"{mode}|{collector}", []).append(_tail_run(mode, endpoint))
                    receiver.clear()
    refusing.close()
    summary: dict[str, Any] = {}
    for key, runs in rows.items():
        summary[key] = {
            metric: {
                "median": statistics.median(r[metric] for r in runs),
                "min": min(r[metric] for r in runs),
                "max": max(r[metric] for r in runs),
            }
            for metric in runs[0]
        }
    return {
        "turns": TAIL_TURNS,
        "warmup_turns": TAIL_WARMUP_TURNS,
        "runs": TAIL_RUNS,
        "rows": summary,
        "raw": rows,
    }


def _tail_lines(tail: dict[str, Any]) -> list[str]:
    """The markdown table of the latency tail."""
    rows = tail["rows"]
    lines = [
        "",
        f"## Turn latency tail (model answers after {MODEL_LATENCY_S * 1000:.0f} ms)",
        "",
        f"One process per configuration, {tail['turns']} turns after {tail['warmup_turns']} "
        f"warm-up turns, {tail['runs']} interleaved runs; each cell is the median over runs "
        "(min-max in brackets), in milliseconds. bare = the app without groundwire; "
        "capture-only = groundwire-langchain spans exported over OTLP by groundwire's provider, "
        "no evaluators, at the thread switch interval configure() sets (1 ms; `, Python's 5 ms`: "
        "at Python's default, as the app ran before groundwire); "
        "background threads = `configure(evaluators=['quoted_spans', "
        "'quote_verification'])` (default embedder) on the runner's threads; worker process = the "
        "same with `executor='process'` (3 s allowed for its background warm-up). "
        "Collector up = a real OTLP/HTTP receiver; "
        "down = a port that refuses connections. Ratio = p99 / capture-only p99 at the same "
        "interval (target 1.1x); the next column divides by capture-only at Python's 5 ms.",
        "",
        "| collector | mode | p50 ms | p99 ms | max ms | p99 vs capture-only | vs capture-only at "
        "5 ms | first 20 turns max ms | configure s | shutdown(5) s | turns scored / errored / "
        "dropped |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def cell(stats: dict[str, float], digits: int = 1) -> str:
        return f"{stats['median']:.{digits}f} ({stats['min']:.{digits}f}-{stats['max']:.{digits}f})"

    for collector in ("up", "down"):
        base = rows[f"capture-only|{collector}"]["p99_ms"]["median"]
        before = rows[f"capture-only, Python's 5 ms|{collector}"]["p99_ms"]["median"]
        for mode in TAIL_MODES:
            key = f"{mode}|{'up' if mode == 'bare' else collector}"
            if mode == "bare" and collector == "down":
                continue
            row = rows[key]
            lines.append(
                f"| {collector if mode != 'bare' else 'none'} | {mode} | {cell(row['p50_ms'])} | "
                f"{cell(row['p99_ms'])} | {cell(row['max_ms'])} | "
                f"**{row['p99_ms']['median'] / base:.2f}x** | "
                f"{row['p99_ms']['median'] / before:.2f}x | "
                f"{cell(row['first_turns_max_ms'])} | {cell(row['configure_s'], 2)} | "
                f"{cell(row['shutdown_s'], 2)} | {row['scored']['median']:.0f} / "
                f"{row['errored']['median']:.0f} / {row['dropped']['median']:.0f} |"
            )
    return lines


def _write(result: dict[str, Any]) -> None:
    """Write results/online.md and online.json."""
    latency, enqueue, throughput = result["latency"], result["enqueue"], result["throughput"]
    lines = [
        "# Online evaluation: app-thread overhead and runner throughput",
        "",
        "App: a LangChain LCEL RAG chain (keyword retriever, fake chat model) traced by "
        "groundwire-langchain, spans dropped by a no-op exporter. off = traced only; on = plus the "
        "evaluation span processor with background `quoted_spans` + `quote_verification` (no "
        "embedder); inline = `quoted_spans` run on the app's thread as the root span ends. "
        "Interleaved rounds; medians (added = median of the per-round differences to off). "
        "groundwire's threads run at a lower OS priority (nice +10). Whole-process CPU covers "
        "the round and the wait until its turns are scored (all threads): the price of scoring "
        "itself, shown without a target. Targets: background evaluation adds < 5% of the app "
        "thread's CPU per turn; p99 of the public calls (`submit`, `on_end`) < 50 µs.",
        "",
        "| app | mode | app-thread CPU µs/turn | added µs | added % | wall µs/turn "
        "| added % (wall) | whole-process CPU µs/turn | added % (process) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, run in (
        ("model answers at once (CPU-bound, worst case)", result["latency"]),
        (f"model answers after {MODEL_LATENCY_S * 1000:.0f} ms", result["latency_llm"]),
    ):
        cpu, wall, process = run["cpu"], run["wall"], run["process_cpu"]
        for name in ("off", "on", "inline"):
            cpu_us = cpu["median_s_per_turn"][name] * 1e6
            wall_us = wall["median_s_per_turn"][name] * 1e6
            process_us = process["median_s_per_turn"][name] * 1e6
            if name == "off":
                lines.append(
                    f"| {label} | {name} | {cpu_us:,.0f} | - | - | {wall_us:,.0f} | - | "
                    f"{process_us:,.0f} | - |"
                )
            else:
                lines.append(
                    f"| | {name} | {cpu_us:,.0f} | {cpu['added_s_per_turn'][name] * 1e6:,.1f} | "
                    f"**{cpu['added_fraction'][name] * 100:.1f}%** | {wall_us:,.0f} | "
                    f"{wall['added_fraction'][name] * 100:.1f}% | {process_us:,.0f} | "
                    f"{process['added_fraction'][name] * 100:.1f}% |"
                )
    cpu = latency["cpu"]
    root, every = latency["root_on_end"], latency["on_end"]
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
        f"| `EvaluationSpanProcessor.on_end`, every span (span hand-off) | "
        f"{every['p50_us']:.1f} | **{every['p99_us']:.1f}** | {every['max_us']:,.0f} | "
        f"{every['n']:,} |",
        f"| `on_end` of root spans only (the turn's last span) | {root['p50_us']:.1f} | "
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
        f"{meta['machine']}, {meta['cpus']} CPUs, load average "
        f"{meta.get('environment', {}).get('load_average_1m', float('nan')):.1f} at the end; "
        f"run took {meta['seconds']:.1f} s. Raw numbers: `online.json`.",
        "",
    ]
    if "keep_up" in result:
        lines += [*keep_up_lines(result["keep_up"]), ""]
    if "tail" in result:
        lines += [*_tail_lines(result["tail"]), ""]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "online.md").write_text("\n".join(lines))
    (RESULTS / "online.json").write_text(json.dumps(result, indent=2))


def main() -> None:
    """Run the five measurements and write results/online.{md,json}."""
    import os

    started = time.perf_counter()
    turns = _throughput_turns()
    result: dict[str, Any] = {
        "latency": bench_latency(),
        "latency_llm": bench_latency(MODEL_LATENCY_S, rounds=7, turns_per_round=25),
        "enqueue": bench_enqueue(turns),
        "throughput": bench_throughput(turns),
        "keep_up": bench_keep_up(_emitter),
        "tail": bench_tail(),
    }
    result["meta"] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "seconds": time.perf_counter() - started,
        "environment": environment(),
    }
    _write(result)
    print((RESULTS / "online.md").read_text())


def main_keep_up() -> None:
    """Measure the keep-up part alone and put it into the existing results/online.{md,json}."""
    result = json.loads((RESULTS / "online.json").read_text())
    result["keep_up"] = bench_keep_up(_emitter)
    _write(result)
    print((RESULTS / "online.md").read_text())


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["keep-up"]:
        main_keep_up()
    else:
        main()
