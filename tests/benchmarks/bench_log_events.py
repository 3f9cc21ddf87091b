"""What log-based result events cost: the `events` switch, span vs logs vs both.

Each turn's three scores (one with details, one failed) are emitted the way the runner emits
them, through real SDK providers whose batch processors hand the telemetry to exporters that
drop it (so exporting costs nothing and the figure is groundwire's work plus the SDK's):

1. Background / offline: `Emitter.emit_span` per turn (the carrier span, plus span events and/or
   one log record per score), on the calling thread.
2. Inline: `Emitter.emit_logs` per turn, what `events="logs"|"both"` adds for inline scores
   (the span events are written by the inline hook itself, measured in bench_online). The
   records are emitted where turns are assembled (the feeder thread), not in the inline hook.

Same turns and scores for every mode, interleaved rounds after a warm-up round; medians of the
per-round µs per turn, with min and max, and the ratio to `span` (the behaviour before log
events). Run: `python -m tests.benchmarks log_events`. Writes results/log_events.{md,json}.
"""

from __future__ import annotations

import json
import math
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from groundwire import Score
from groundwire.emit import Emitter
from tests.benchmarks._timing import results_dir, scaled

RESULTS = results_dir()
ROUNDS = scaled(9, 1)
TURNS_PER_ROUND = scaled(2_000, 20)
MODES = ("span", "logs", "both")
SCORES = (
    Score(
        name="quote_verification",
        value=0.5,
        label="partially_verified",
        explanation="1 of 2 quotes found",
        details={"quotes": [{"quote": "the cat sat on the mat", "bm25_ratio": 3.2}] * 2},
    ),
    Score(name="quoted_spans", value=1.0, label="all_found"),
    Score.failed("groundedness", TimeoutError("judge timed out")),
)


class _DropSpans(SpanExporter):
    """Drops spans."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Accept and forget."""
        return SpanExportResult.SUCCESS


class _DropLogs(LogRecordExporter):
    """Drops log records."""

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        """Accept and forget."""
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing buffered."""
        return True


def _emitter(mode: str) -> tuple[Emitter, Callable[[], None]]:
    """An Emitter on fresh batching providers; the second item shuts them down."""
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(_DropSpans(), max_queue_size=65_536))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(
        BatchLogRecordProcessor(_DropLogs(), max_queue_size=65_536)
    )
    meter_provider = MeterProvider()
    emitter = Emitter(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        events=mode,
        capture_content=True,
    )

    def close() -> None:
        tracer_provider.shutdown()
        logger_provider.shutdown()
        meter_provider.shutdown()

    return emitter, close


def _targets(count: int) -> list[tuple[str, str]]:
    """Distinct evaluated-span ids, the same for every mode."""
    return [(f"{i + 1:032x}", f"{i + 1:016x}") for i in range(count)]


def _time_per_turn(mode: str, path: str, targets: list[tuple[str, str]]) -> float:
    """µs per turn of one path in one mode (thread CPU time: what the calling thread pays)."""
    emitter, close = _emitter(mode)
    try:
        started = time.thread_time()
        if path == "background":
            for target in targets:
                emitter.emit_span(target, SCORES)
        else:
            for target in targets:
                emitter.emit_logs(target, SCORES, mode="inline")
        elapsed = time.thread_time() - started
    finally:
        close()
    return elapsed / len(targets) * 1e6


def main() -> None:
    """Run the rounds and write the results."""
    started = time.perf_counter()
    targets = _targets(TURNS_PER_ROUND)
    samples: dict[str, dict[str, list[float]]] = {
        path: {mode: [] for mode in MODES} for path in ("background", "inline")
    }
    for path in samples:
        for mode in MODES:  # warm-up round, discarded
            _time_per_turn(mode, path, targets[:200])
    for _ in range(ROUNDS):
        for path, by_mode in samples.items():
            for mode in MODES:
                by_mode[mode].append(_time_per_turn(mode, path, targets))
    rows: list[dict[str, Any]] = []
    for path, by_mode in samples.items():
        base = statistics.median(by_mode["span"])
        for mode in MODES:
            values = by_mode[mode]
            median = statistics.median(values)
            rows.append(
                {
                    "path": path,
                    "mode": mode,
                    "median_us": median,
                    "min_us": min(values),
                    "max_us": max(values),
                    "ratio_to_span": median / base if base > 0 else math.nan,
                }
            )
    elapsed = time.perf_counter() - started
    RESULTS.mkdir(parents=True, exist_ok=True)
    meta = {
        "rounds": ROUNDS,
        "turns_per_round": TURNS_PER_ROUND,
        "scores_per_turn": len(SCORES),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "seconds": round(elapsed, 1),
    }
    (RESULTS / "log_events.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    lines = [
        "# Log-based result events: cost of the `events` switch",
        "",
        f"Per turn: {len(SCORES)} scores (one with details, one failed) through real SDK "
        "providers with batch processors and exporters that drop. Calling thread's CPU time; "
        f"{ROUNDS} interleaved rounds of {TURNS_PER_ROUND:,} turns after a warm-up round; "
        "median (min-max) µs per turn; ratio to `span`, the behaviour before log events.",
        "",
        "| path | events | µs/turn (median) | min | max | ratio to span |",
        "|---|---|---:|---:|---:|---:|",
    ]
    what = {
        "background": "background/offline `emit_span` (carrier span + events/records)",
        "inline": "inline scores' `emit_logs` (records only; feeder thread)",
    }
    for row in rows:
        ratio = row["ratio_to_span"]
        lines.append(
            f"| {what[row['path']]} | `{row['mode']}` | {row['median_us']:.1f} | "
            f"{row['min_us']:.1f} | {row['max_us']:.1f} | "
            f"{'-' if row['path'] == 'inline' else f'{ratio:.2f}x'} |"
        )
    lines += [
        "",
        "Inline rows are what the switch adds per turn for inline scores, paid by the feeder "
        "thread, not the request (with `span` no record is emitted: the row is the switch check "
        "alone; the span events themselves are written by the inline hook, measured in "
        "online.md), so they have no ratio.",
        f"Python {meta['python']} on {meta['machine']}, 2 CPUs shared with other work; run took "
        f"{elapsed:.1f} s. Raw numbers: `log_events.json`.",
    ]
    (RESULTS / "log_events.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
