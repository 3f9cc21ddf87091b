"""Run 10,000 turns through a BackgroundRunner and print what memory they left behind (JSON).

Run as its own process by `test_runner.py`: threads left by other tests in the same process
(a judge server printing a late traceback fills linecache with ~200 KB) are not the runner's.
"""

from __future__ import annotations

import gc
import json
import tracemalloc

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig

from .conftest import AnswerLength, make_turn

BATCH = 500
BATCHES = 20


def main() -> None:
    """Warm up with one batch, then measure the next `BATCHES`; print counts and bytes."""
    reader = InMemoryMetricReader()
    unsampled = TracerProvider(sampler=ALWAYS_OFF)  # the runner is under test, not the SDK
    emitter = Emitter(tracer_provider=unsampled, meter_provider=MeterProvider([reader]))
    runner = BackgroundRunner(RunnerConfig([AnswerLength()]), emitter)
    turns = [make_turn(i) for i in range(BATCH)]

    def run_batch() -> None:
        """Submit the batch and wait for it."""
        for turn in turns:
            runner.submit(turn)
        if not runner.force_flush(30):
            raise SystemExit("force_flush timed out")

    run_batch()  # warm-up: instruments, attribute sets, thread stacks
    # A full collection before each reading also empties CPython's free lists (tuples, floats),
    # which tracemalloc counts as live and which otherwise swing by ~500 KB from run to run.
    gc.collect()
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for _ in range(BATCHES):
            run_batch()
        gc.collect()
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    stats = runner.stats()
    runner.shutdown(1)
    report = {
        "scored": stats.scored,
        "dropped": stats.dropped,
        "adds_up": stats.adds_up(),
        "retained": current - baseline,
        "peak": peak - baseline,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
