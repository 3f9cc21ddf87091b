"""What every groundwire-owned thread does first, and the warm-up of groundwire's evaluators.

Shared by the background runner, the span processor's inline worker and the evaluation worker
process (`_process`), so none of them imports another for it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import cast

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, set_value

from groundwire._evaluator import AnyEvaluator, Evaluator, is_async_evaluator, run_evaluator
from groundwire._types import RagTurn

__all__ = [
    "ThreadPool",
    "background_thread_setup",
    "suppress_instrumentation",
    "warm_up_evaluators",
]

logger = logging.getLogger("groundwire.runner")

_NICE = 10
"""Added to the nice value of groundwire's threads on Linux."""
_WARM_UP_TURN = RagTurn(
    query="Where did the cat sit?",
    contexts=["Once upon a time the cat sat on the mat, and the dog slept by the door."],
    answer='The story says "the cat sat on the mat" and "the dog slept by the door".',
)


def warm_up_evaluators(evaluators: list[AnyEvaluator]) -> None:
    """Run each of groundwire's own sync evaluators once on a small made-up turn, so that lazy
    imports, index structures and the embedding model load now rather than on the first turns,
    beside the app. Scores are discarded, nothing is counted; evaluators from other packages are
    not called (their side effects are unknown)."""
    for evaluator in evaluators:
        if is_async_evaluator(evaluator) or not type(evaluator).__module__.startswith(
            "groundwire."
        ):
            continue
        outcome = run_evaluator(cast(Evaluator, evaluator), _WARM_UP_TURN)
        if outcome.raised:
            logger.debug("warm-up of %s raised; it will load on first use", evaluator.name)


def suppress_instrumentation() -> None:
    """Suppress instrumentation for the rest of this (groundwire-owned) thread: never trace us."""
    attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))


def background_thread_setup() -> None:
    """Start of every groundwire thread: no self-tracing, and a lower OS priority where the
    platform allows it (Linux: a per-thread nice value), so the app's threads win the CPU."""
    suppress_instrumentation()
    if sys.platform.startswith("linux"):
        thread_id = threading.get_native_id()
        with contextlib.suppress(OSError):
            nice = os.getpriority(os.PRIO_PROCESS, thread_id)
            os.setpriority(os.PRIO_PROCESS, thread_id, min(19, nice + _NICE))


class ThreadPool:
    """The runner's daemon threads: numbered workers running `work(worker_id)`, and helpers."""

    def __init__(self, work: Callable[[int], None]) -> None:
        self._work = work
        self._ids = itertools.count()
        self._threads: list[threading.Thread] = []

    def spawn(self, target: Callable[[], None], name: str) -> threading.Thread:
        """Start a daemon thread owned by the pool."""
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def start_worker(self) -> None:
        """Start one more worker thread."""
        worker_id = next(self._ids)
        self.spawn(lambda: self._work(worker_id), f"groundwire-worker-{worker_id}")

    def join(self, budget_s: float) -> None:
        """Wait for the threads to exit, `budget_s` in all: a hung call's thread is abandoned,
        never waited for one by one."""
        joined_by = time.monotonic() + budget_s
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, joined_by - time.monotonic()))
