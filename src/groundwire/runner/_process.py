"""`executor="process"`: groundwire's sync evaluators run in one worker process, off the app's GIL.

The runner's worker threads stay in the app's process (admission, sampling, budgets, counting
and emitting are unchanged); for each turn they send the turn and the names of the evaluators to
run down a pipe to a daemon worker process (spawned, so no lock or thread of the app is
inherited) and wait for the outcomes, releasing the GIL meanwhile. The process holds unpickled
copies of the evaluators, warms them up when it starts (in the background: `configure()` does not
wait), and runs at a lower OS priority. A call that overruns the evaluator timeout kills and
replaces the process (Python cannot interrupt a call, but it can end a process); a process that
died after it started (killed by the OS, a crash in native code) is replaced at the next call;
one that died while starting (an evaluator that cannot be loaded there) is not started again:
every call fails with a RuntimeError saying so (the runner counts it as an error).
Being a daemon process, it never holds the app's exit: multiprocessing terminates it then.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import multiprocessing
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from multiprocessing.connection import Connection

from groundwire._evaluator import AnyEvaluator, EvaluationOutcome, Evaluator, run_evaluator
from groundwire._types import RagTurn
from groundwire.runner._threads import warm_up_evaluators

__all__ = ["EXECUTORS", "ProcessExecutor"]

logger = logging.getLogger("groundwire.runner")

EXECUTORS = ("threads", "process")
"""Values of `RunnerConfig.executor` / `configure(executor=...)` / `GROUNDWIRE_EXECUTOR`."""
_NICE = 10
_READY = -1
"""The call id of the worker's "started and warmed up" message."""
_EXITED = "the evaluation worker process exited"
"""Why calls fail when the process ended after it was ready (it is replaced at the next call)."""
_STARTUP_LIMIT_S = 120.0
"""How long a call waits for the worker to start (its evaluator timeout starts after that)."""


def _serve(blob: bytes, connection: Connection) -> None:  # pragma: no cover - in the child
    """The worker process: unpickle the evaluators, warm them up, then answer requests."""
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(_NICE)
    evaluators: dict[str, Evaluator] = {e.name: e for e in pickle.loads(blob)}
    warm_up_evaluators(list(evaluators.values()))
    connection.send((_READY, None))
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        call_id, names, turn = request
        outcomes = [run_evaluator(evaluators[name], turn) for name in names]
        try:
            connection.send((call_id, outcomes))
        except (BrokenPipeError, OSError):
            return


class ProcessExecutor:
    """One daemon worker process running sync evaluators; thread-safe."""

    def __init__(self, evaluators: Sequence[AnyEvaluator]) -> None:
        self._blob = pickle.dumps(list(evaluators))
        self._context = multiprocessing.get_context("spawn")
        self._lock = threading.Lock()
        self._pending: dict[int, Future[list[EvaluationOutcome]]] = {}
        self._ids = itertools.count()
        self._closed = False
        self._start()

    def _start(self) -> None:
        """Spawn the process and the thread reading its answers (lock held or in __init__)."""
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=_serve, args=(self._blob, child), name="groundwire-evaluator", daemon=True
        )
        process.start()
        child.close()
        self._process, self._connection = process, parent
        self._ready = threading.Event()
        self._warm = False
        """Whether this process said it was ready (a process that dies after that is replaced
        at the next call; one that dies while starting is not: it would die again)."""
        self._ended = False
        """Whether its pipe ended (the process exited or was killed), set by its reader."""
        reader = threading.Thread(
            target=self._read,
            args=(parent, self._ready),
            name="groundwire-process-reader",
            daemon=True,
        )
        reader.start()

    def _read(self, connection: Connection, ready: threading.Event) -> None:
        """Hand each answer to the waiting caller; on a dead process fail what was pending."""
        while True:
            try:
                call_id, outcomes = connection.recv()
            except (EOFError, OSError):
                break
            if call_id == _READY:
                with self._lock:
                    if connection is self._connection:
                        self._warm = True
                ready.set()
                continue
            with self._lock:
                future = self._pending.pop(call_id, None)
            if future is not None:
                future.set_result(outcomes)
        ready.set()  # a process that died before it was ready: its callers fail, not wait
        with self._lock:
            if connection is not self._connection:
                return  # replaced: its callers were failed when it was killed
            self._ended = True
            pending, self._pending = self._pending, {}
        for future in pending.values():
            future.set_exception(RuntimeError(_EXITED))

    def evaluate(
        self, names: Sequence[str], turn: RagTurn, timeout_s: float | None
    ) -> list[EvaluationOutcome]:
        """Run the named evaluators on `turn` in the process; TimeoutError (and a fresh
        process) when it takes longer than `timeout_s`, counted once the process is ready
        (its start and warm-up are not the evaluation's time)."""
        future: Future[list[EvaluationOutcome]] = Future()
        with self._lock:
            if not self._closed and self._warm and self._ended:
                self._replace_dead()
            ready = self._ready
        if not ready.wait(_STARTUP_LIMIT_S):
            raise RuntimeError("the evaluation worker process did not start")
        with self._lock:
            if self._closed:
                raise RuntimeError("the evaluation worker process is shut down")
            if self._ended:  # died while starting, or since the replacement check above
                raise RuntimeError(self._exited())
            call_id = next(self._ids)
            self._pending[call_id] = future
            try:
                self._connection.send((call_id, tuple(names), turn))
            except OSError:  # it ended before its reader saw it: the call fails, counted
                del self._pending[call_id]
                raise RuntimeError(self._exited()) from None
        try:
            return future.result(timeout_s)
        except TimeoutError:
            self._restart()
            raise

    def _exited(self) -> str:
        """Why a call fails on a process that has ended (lock held): one that died while
        starting is not started again, one that died later is replaced at the next call."""
        if self._warm:
            return _EXITED
        return _exited_while_starting(self._process)

    def _replace_dead(self) -> None:
        """Start another process in place of one that died after it was ready (killed by the
        OS, a crash in native code); its callers were failed by its reader, which emptied
        `_pending` as it set `_ended`, and no call is sent to an ended process (lock held)."""
        dead, _nothing_pending = self._replace(kill=False)
        logger.warning(
            "the evaluation worker process exited (exit code %s); another was started",
            dead.exitcode,
        )

    def _restart(self) -> None:
        """Kill a process stuck in a call and start another; its pending callers fail."""
        with self._lock:
            if self._closed:
                return
            old, pending = self._replace(kill=True)
        old.join(1.0)  # reaped: no zombie left behind
        logger.warning("an evaluation overran its timeout; the evaluation worker process restarted")
        _fail(pending, lambda: TimeoutError("the evaluation worker process was restarted"))

    def _replace(
        self, *, kill: bool
    ) -> tuple[multiprocessing.process.BaseProcess, dict[int, Future[list[EvaluationOutcome]]]]:
        """Close the current process's pipe, kill it (`kill`) or reap it (its pipe has ended: it
        is exiting), and start another; the old process and its pending calls (lock held)."""
        old, pending, self._pending = self._process, self._pending, {}
        with contextlib.suppress(OSError):
            self._connection.close()
        if kill:
            old.kill()
        else:
            old.join(1.0)  # reaped, with its exit code
        self._start()
        return old, pending

    def close(self) -> None:
        """Stop the process (it is a daemon: it never outlives the app in any case)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            with contextlib.suppress(OSError, BrokenPipeError):
                self._connection.send(None)
            process = self._process
        process.join(0.05)
        if process.is_alive():
            process.kill()
            process.join(1.0)


def _fail(
    pending: dict[int, Future[list[EvaluationOutcome]]], error: Callable[[], Exception]
) -> None:
    """Fail the calls still waiting on a replaced process, each with its own `error()`."""
    for future in pending.values():
        if not future.done():
            future.set_exception(error())


def _exited_while_starting(process: multiprocessing.process.BaseProcess) -> str:
    """Why a call fails when the worker died before it was ready (it is not started again:
    it would die again), with its exit code once it is known."""
    process.join(1.0)  # its pipe ended: it is exiting, and the join returns at once
    return (
        f"the evaluation worker process exited while starting (exit code {process.exitcode}); "
        "it is not started again"
    )
