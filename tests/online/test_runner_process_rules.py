"""`ProcessExecutor` (`runner._process`) used directly: one worker process answering calls, a
timeout that replaces it, a death that fails its callers, and close(). Every process a test
started is reaped before the next test (mutmut fails on a child left unreaped), and each test
takes about a second."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import pytest

from groundwire import RagTurn, Score
from groundwire.runner._process import EXECUTORS, ProcessExecutor

from .conftest import AnswerLength, HasContext, make_turn

# Each test takes about a second: 30 s ends a hung one well before the suite-wide 120 s.
pytestmark = [pytest.mark.usefixtures("reaped"), pytest.mark.timeout(30)]


class _Pid:
    """Says which process it runs in (picklable: module level)."""

    name = "pid"

    def evaluate(self, turn: RagTurn) -> Score:
        """The process id as the explanation."""
        return Score(name=self.name, value=1.0, explanation=str(os.getpid()))


class _SleepsOnOne:
    """Takes 10 s on the turn of trace id 1 (past any timeout here), answers at once else."""

    name = "sleeps"

    def evaluate(self, turn: RagTurn) -> Score:
        """Sleep on turn 1, then score."""
        if turn.trace_id == make_turn(1).trace_id:
            time.sleep(10)
        return Score(name=self.name, value=1.0)


class _ExitsOnOne:
    """Ends its process on the turn of trace id 1."""

    name = "exits"

    def evaluate(self, turn: RagTurn) -> Score:
        """Exit on turn 1, else score."""
        if turn.trace_id == make_turn(1).trace_id:
            os._exit(3)
        return Score(name=self.name, value=1.0)


def _children() -> set[multiprocessing.process.BaseProcess]:
    """This process's live multiprocessing children."""
    return set(multiprocessing.active_children())


def test_the_executors_are_threads_and_process() -> None:
    """The names `executor=` accepts."""
    assert EXECUTORS == ("threads", "process")


def test_calls_are_answered_by_one_named_daemon_process_in_the_order_asked() -> None:
    """The named evaluators run in the worker (another process, a daemon named
    `groundwire-evaluator`), in the order named, each call on the same process."""
    before = _children()
    executor = ProcessExecutor([HasContext(), AnswerLength(), _Pid()])
    try:
        (process,) = _children() - before
        assert process.name == "groundwire-evaluator" and process.daemon
        first = executor.evaluate(["pid", "answer_length", "has_context"], make_turn(2), 30.0)
        assert [o.score.name for o in first] == ["pid", "answer_length", "has_context"]
        assert [o.score.value for o in first[1:]] == [0.09, 1.0]
        assert first[0].score.explanation == str(process.pid) != str(os.getpid())
        second = executor.evaluate(["pid"], make_turn(3), None)
        assert second[0].score.explanation == first[0].score.explanation
    finally:
        executor.close()


def test_a_call_past_its_timeout_raises_and_a_fresh_process_answers_the_next() -> None:
    """TimeoutError for the overrunning call; the stuck process is replaced, and calls go on."""
    executor = ProcessExecutor([_SleepsOnOne(), _Pid()])
    try:
        (first,) = executor.evaluate(["pid"], make_turn(2), 30.0)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            executor.evaluate(["sleeps"], make_turn(1), 0.3)
        assert time.monotonic() - started < 5
        (again,) = executor.evaluate(["sleeps", "pid"], make_turn(2), 30.0)[1:]
        assert again.score.explanation != first.score.explanation
    finally:
        executor.close()


def test_callers_waiting_on_a_replaced_process_fail_with_a_timeout() -> None:
    """A call waiting on the same process when another call's timeout replaces it fails at
    once, saying the process was restarted."""
    executor = ProcessExecutor([_SleepsOnOne()])
    errors: list[BaseException] = []

    def wait_long() -> None:
        try:
            executor.evaluate(["sleeps"], make_turn(2), 30.0)
        except BaseException as error:
            errors.append(error)

    try:
        executor.evaluate(["sleeps"], make_turn(2), 30.0)  # started and ready
        blocked = threading.Thread(target=wait_long)
        threading.Timer(0.1, blocked.start).start()
        with pytest.raises(TimeoutError):
            executor.evaluate(["sleeps"], make_turn(1), 0.5)
        blocked.join(5)
        assert [(type(e), str(e)) for e in errors] == [
            (TimeoutError, "the evaluation worker process was restarted")
        ]
    finally:
        executor.close()


def test_a_process_that_dies_fails_its_callers_with_a_runtime_error() -> None:
    """A call whose process exits fails with a RuntimeError saying so."""
    executor = ProcessExecutor([_ExitsOnOne()])
    try:
        with pytest.raises(RuntimeError, match=r"^the evaluation worker process exited$"):
            executor.evaluate(["exits"], make_turn(1), 30.0)
    finally:
        executor.close()


def test_a_process_that_died_after_starting_is_replaced_at_the_next_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """After the worker process dies (here it exits; the OS killing it is the same), the next
    call is answered by a new process, with one warning giving the exit code; sync evaluation
    does not stay broken (every later call failed with BrokenPipeError before)."""
    executor = ProcessExecutor([_ExitsOnOne(), _Pid()])
    try:
        first = int(executor.evaluate(["pid"], make_turn(2), 30.0)[0].score.explanation or "0")
        with pytest.raises(RuntimeError, match=r"^the evaluation worker process exited$"):
            executor.evaluate(["exits"], make_turn(1), 30.0)
        with caplog.at_level("WARNING", logger="groundwire.runner"):
            (outcome,) = executor.evaluate(["pid"], make_turn(2), 30.0)
        assert int(outcome.score.explanation or "0") not in (0, first, os.getpid())
        assert [r.getMessage() for r in caplog.records] == [
            "the evaluation worker process exited (exit code 3); another was started"
        ]
        assert executor.evaluate(["exits"], make_turn(2), 30.0)[0].score.value == 1.0
    finally:
        executor.close()


def test_close_ends_the_process_and_later_calls_are_refused() -> None:
    """close() ends the worker process at once; a call after it raises; closing twice is
    harmless."""
    before = _children()
    executor = ProcessExecutor([HasContext()])
    (process,) = _children() - before
    executor.evaluate(["has_context"], make_turn(2), 30.0)
    started = time.monotonic()
    executor.close()
    process.join(5)
    assert not process.is_alive() and time.monotonic() - started < 2
    with pytest.raises(RuntimeError, match=r"^the evaluation worker process is shut down$"):
        executor.evaluate(["has_context"], make_turn(2), 30.0)
    executor.close()
