"""Parts shared by the executor tests (`test_runner_executors*.py`): a stand-in for the runner's
`record`, `finish` and `skip` that keeps what it was handed, a planned job, and polling."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from groundwire import RagTurn
from groundwire._evaluator import AnyEvaluator, EvaluationOutcome
from groundwire.runner._jobs import NO_INLINE, Job


@dataclass
class Seen:
    """What the executors handed back: recorded outcomes, finished jobs, skipped evaluations,
    and the ids of worker threads the pool started."""

    records: list[tuple[Job, str, EvaluationOutcome]] = field(default_factory=list)
    finished: list[Job] = field(default_factory=list)
    skipped: list[tuple[Job, str]] = field(default_factory=list)
    workers: list[int] = field(default_factory=list)

    def record(self, job: Job, evaluator: AnyEvaluator, outcome: EvaluationOutcome) -> None:
        """The runner's `_record`: keep the outcome."""
        self.records.append((job, evaluator.name, outcome))

    def finish(self, job: Job) -> None:
        """The runner's `_finish`: keep the job."""
        job.done = True
        self.finished.append(job)

    def skip(self, job: Job, evaluator: AnyEvaluator) -> None:
        """The runner's `_skip`: keep what was skipped."""
        self.skipped.append((job, evaluator.name))

    def work(self, worker_id: int) -> None:
        """A replacement worker: note that it started, do nothing else."""
        self.workers.append(worker_id)


def planned_job(turn: RagTurn, sync: list[AnyEvaluator], asynchronous: list[AnyEvaluator]) -> Job:
    """A planned job with these evaluators to run."""
    names = {e.name for e in [*sync, *asynchronous]}
    return Job(turn, NO_INLINE, pending=names, planned=True, sync=sync, asynchronous=asynchronous)


def threads_named(name: str) -> list[threading.Thread]:
    """Live threads called `name`."""
    return [t for t in threading.enumerate() if t.name == name]


def wait_for(condition: Callable[[], object], limit_s: float = 5.0) -> None:
    """Poll a zero-argument callable until it is true (or fail after `limit_s`)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.005)
