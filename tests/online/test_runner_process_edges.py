"""`ProcessExecutor` (`runner._process`) at its edges: the worker is spawned (not forked), a
worker that dies while it starts fails the call at once and is not started again, and a
timeout is the caller's. Every process a test started is reaped before the next test (mutmut
fails on a child left unreaped); each test takes about a second."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Iterator
from multiprocessing.connection import Connection

import pytest

from groundwire import RagTurn, Score, semconv
from groundwire.emit import Emitter
from groundwire.runner import BackgroundRunner, RunnerConfig
from groundwire.runner import _process as process_module
from groundwire.runner._process import ProcessExecutor, _serve

from .conftest import AnswerLength, HasContext, Telemetry, make_turn

# Each test takes about a second: 30 s ends a hung one well before the suite-wide 120 s.
pytestmark = [pytest.mark.usefixtures("reaped"), pytest.mark.timeout(30)]

_SEEN_BY_PARENT = {"value": "as imported"}
"""Changed by a test in this process: a forked worker would see the change, a spawned one not."""


class _Imported:
    """Says what this module's `_SEEN_BY_PARENT` holds in the process it runs in."""

    name = "imported"

    def evaluate(self, turn: RagTurn) -> Score:
        """The module global as the explanation."""
        return Score(name=self.name, value=1.0, explanation=_SEEN_BY_PARENT["value"])


class _DiesOnLoad:
    """Ends the worker process as it is unpickled there, before the worker is ready."""

    name = "dies"

    def __reduce__(self) -> tuple[object, tuple[int]]:
        """Unpickling calls os._exit(4)."""
        return (os._exit, (4,))

    def evaluate(self, turn: RagTurn) -> Score:
        """Never reached: the worker ends before it is ready."""
        raise AssertionError("unreachable")


class _Sleeps:
    """Takes 10 s on every turn (past any timeout here)."""

    name = "sleeps"

    def evaluate(self, turn: RagTurn) -> Score:
        """Sleep, then score."""
        time.sleep(10)
        return Score(name=self.name, value=1.0)


def test_the_worker_is_spawned_so_it_inherits_nothing_of_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker imports the app's modules afresh (spawn): state the app changed at run time
    (here a module global; in an app, locks and threads) is not carried into it, as a fork
    would."""
    monkeypatch.setitem(_SEEN_BY_PARENT, "value", "changed in the app")
    executor = ProcessExecutor([_Imported()])
    try:
        (outcome,) = executor.evaluate(["imported"], make_turn(2), 30.0)
        assert outcome.score.explanation == "as imported"
    finally:
        executor.close()


def test_a_worker_that_dies_while_starting_fails_the_call_at_once_and_is_not_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A worker that exits before it is ready (here while loading the evaluators) fails the
    waiting call at once rather than after the 120 s start limit, and the next call fails too
    without starting another process (it would only die again)."""
    before = set(multiprocessing.active_children())
    executor = ProcessExecutor([_DiesOnLoad()])
    started = set(multiprocessing.active_children()) - before
    errors: list[BaseException] = []

    def call() -> None:
        try:
            executor.evaluate(["dies"], make_turn(2), 30.0)
        except BaseException as error:
            errors.append(error)

    try:
        with caplog.at_level("WARNING", logger="groundwire.runner"):
            for _ in range(2):
                caller = threading.Thread(target=call)
                caller.start()
                caller.join(10)
                assert not caller.is_alive()
        assert caplog.records == []  # no "another was started"
        assert len(errors) == 2
        assert all(isinstance(e, RuntimeError | OSError) for e in errors)
        assert set(multiprocessing.active_children()) - before <= started
    finally:
        executor.close()


def test_the_call_waits_only_its_own_timeout_once_the_worker_is_ready() -> None:
    """A call that overruns `timeout_s` raises TimeoutError after about `timeout_s`, not after
    the evaluation finishes (10 s here)."""
    executor = ProcessExecutor([_Sleeps()])
    try:
        errors: list[BaseException] = []

        def call() -> None:
            try:
                executor.evaluate(["sleeps"], make_turn(2), 1.0)
            except BaseException as error:
                errors.append(error)

        caller = threading.Thread(target=call)
        caller.start()
        caller.join(8)
        assert not caller.is_alive()
        assert [type(e) for e in errors] == [TimeoutError]
    finally:
        executor.close()


class _Priority:
    """Says the nice value of the thread it runs on (Linux: nice is per thread)."""

    name = "priority"

    def evaluate(self, turn: RagTurn) -> Score:
        """The calling thread's nice value as the explanation."""
        nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return Score(name=self.name, value=1.0, explanation=str(nice))


def _serving(evaluators: list[object]) -> tuple[Connection, threading.Thread]:
    """Run the worker's loop (`_serve`, what the spawned process runs) on a thread here, so
    that its rules are tested where they run; the pipe end that talks to it."""
    parent, child = multiprocessing.Pipe()
    server = threading.Thread(target=_serve, args=(pickle.dumps(evaluators), child), daemon=True)
    server.start()
    return parent, server


@contextlib.contextmanager
def _served(evaluators: list[object]) -> Iterator[Connection]:
    """`_serving` for a test body that talks to the loop: afterwards None must end the loop
    (checked), and the pipe is closed whatever happened."""
    connection, server = _serving(evaluators)
    try:
        yield connection
        connection.send(None)
        server.join(5)
        assert not server.is_alive()
    finally:
        connection.close()
        server.join(5)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")
def test_the_worker_loop_says_ready_then_answers_each_call_by_id_at_a_lower_priority() -> None:
    """The worker says it is ready (call id -1) once, then answers each request with its call
    id and the named evaluators' outcomes, in the order named, at nice +10; None ends it."""
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with _served([AnswerLength(), _Priority()]) as connection:
        assert connection.poll(5)
        assert connection.recv() == (-1, None)
        connection.send((7, ("priority", "answer_length"), make_turn(2)))
        call_id, outcomes = connection.recv()
        assert call_id == 7
        assert [(o.score.name, o.score.explanation) for o in outcomes][:1] == [
            ("priority", str(min(base + 10, 19)))
        ]
        assert [o.score.value for o in outcomes][1:] == [0.09]
        connection.send((8, ("answer_length",), make_turn(3)))
        assert connection.recv()[0] == 8


def test_the_worker_loop_ends_when_the_app_end_of_its_pipe_closes() -> None:
    """The worker ends when its pipe ends (the app's side closed), rather than waiting on."""
    connection, server = _serving([AnswerLength()])
    assert connection.poll(5) and connection.recv() == (-1, None)
    connection.close()
    server.join(5)
    assert not server.is_alive()


def test_a_timeout_restart_is_logged_once_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A call that overruns its timeout leaves one warning saying the worker restarted."""
    executor = ProcessExecutor([_Sleeps()])
    try:
        with caplog.at_level("WARNING", logger="groundwire.runner"), pytest.raises(TimeoutError):
            executor.evaluate(["sleeps"], make_turn(2), 0.5)
        assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
            (
                "WARNING",
                "an evaluation overran its timeout; the evaluation worker process restarted",
            )
        ]
    finally:
        executor.close()


def test_a_worker_that_died_while_starting_fails_each_call_with_a_runtime_error_naming_it() -> None:
    """Once the worker died while starting, each call fails with a RuntimeError that says so
    with its exit code (never a raw BrokenPipeError from writing to the dead pipe), however
    soon after the death it comes."""
    executor = ProcessExecutor([_DiesOnLoad()])
    try:
        for _ in range(3):
            with pytest.raises(RuntimeError) as raised:
                executor.evaluate(["dies"], make_turn(2), 30.0)
            assert type(raised.value) is RuntimeError
            assert str(raised.value) == (
                "the evaluation worker process exited while starting (exit code 4); "
                "it is not started again"
            )
    finally:
        executor.close()


def test_the_runner_counts_turns_whose_worker_died_while_starting_as_errors(
    telemetry: Telemetry, emitter: Emitter
) -> None:
    """Through the runner (`executor="process"`), each turn's evaluations of a worker that
    died while starting are scored as failed with that error and counted, and the turns add
    up as errored: nothing is lost, no exception reaches a worker thread."""
    config = RunnerConfig([_DiesOnLoad(), HasContext()], executor="process", workers=1)
    runner = BackgroundRunner(config, emitter)
    try:
        for i in (1, 2):
            runner.submit(make_turn(i))
        assert runner.force_flush(60)
        stats = runner.stats()
        assert (stats.errored, stats.scored) == (2, 0)
        assert telemetry.counts() == {("dies", "error"): 2, ("has_context", "error"): 2}
        for span in telemetry.finished(semconv.EVALUATION_SPAN_NAME):
            texts = [str(v) for v in (span.attributes or {}).values()]
            assert any("exited while starting (exit code 4)" in t for t in texts), texts
    finally:
        runner.shutdown(1)


def test_the_worker_loop_scores_each_named_evaluator_on_the_turn_it_was_sent() -> None:
    """Each answer holds the outcome of every named evaluator on that request's own turn (the
    call id and the outcomes arrive within seconds; a loop that fails on a request would leave
    the caller waiting, so the test polls instead of blocking)."""
    with _served([AnswerLength(), HasContext()]) as connection:
        assert connection.poll(5) and connection.recv() == (-1, None)
        for call_id, turn in ((3, make_turn(2, "a much longer answer")), (4, make_turn(3))):
            connection.send((call_id, ("has_context", "answer_length"), turn))
            assert connection.poll(5)
            answered, outcomes = connection.recv()
            assert answered == call_id
            assert [o.score.name for o in outcomes] == ["has_context", "answer_length"]
            assert outcomes[1].score.value == AnswerLength().evaluate(turn).value
            assert outcomes[0].score.value == HasContext().evaluate(turn).value


def test_a_call_past_its_timeout_kills_the_stuck_process_at_once() -> None:
    """The process stuck in the overrunning call is killed (and reaped) before the caller
    gets its TimeoutError, rather than left to finish its 10 s evaluation."""
    before = set(multiprocessing.active_children())
    executor = ProcessExecutor([_Sleeps()])
    try:
        (stuck,) = set(multiprocessing.active_children()) - before
        with pytest.raises(TimeoutError):
            executor.evaluate(["sleeps"], make_turn(2), 0.5)
        assert not stuck.is_alive()
        assert stuck.exitcode == -signal.SIGKILL
    finally:
        executor.close()


def test_each_process_has_a_named_daemon_reader_thread() -> None:
    """The thread reading the process's answers is named for it (thread dumps say what it is)
    and is a daemon, so it never holds the app's exit."""
    before = set(threading.enumerate())
    executor = ProcessExecutor([AnswerLength()])
    try:
        (reader,) = set(threading.enumerate()) - before
        assert reader.name == "groundwire-process-reader"
        assert reader.daemon
    finally:
        executor.close()


def _loaded_slowly() -> AnswerLength:
    """Unpickles (in the worker) to an evaluator, 3 s later."""
    time.sleep(3)
    return AnswerLength()


class _SlowToLoad:
    """Takes 3 s to load in the worker process, so the worker is not ready before that."""

    name = "answer_length"

    def __reduce__(self) -> tuple[object, tuple[()]]:
        """Unpickling calls _loaded_slowly()."""
        return (_loaded_slowly, ())

    def evaluate(self, turn: RagTurn) -> Score:
        """Never called here: the worker runs what _loaded_slowly gives."""
        raise AssertionError("unreachable")


def test_a_call_waits_for_the_start_only_up_to_the_start_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worker not ready within the start limit fails the call with a RuntimeError saying
    so, rather than holding the caller until it is (the limit, 120 s, is shortened here)."""
    monkeypatch.setattr(process_module, "_STARTUP_LIMIT_S", 0.5)
    executor = ProcessExecutor([_SlowToLoad()])
    try:
        started = time.monotonic()
        with pytest.raises(RuntimeError) as raised:
            executor.evaluate(["answer_length"], make_turn(2), 30.0)
        assert str(raised.value) == "the evaluation worker process did not start"
        assert time.monotonic() - started < 2.5
    finally:
        executor.close()


class _SlowEcho:
    """Answers after 0.3 s with the turn's question, so that calls overlap."""

    name = "echo"

    def evaluate(self, turn: RagTurn) -> Score:
        """The question as the explanation."""
        time.sleep(0.3)
        return Score(name=self.name, value=1.0, explanation=turn.query)


def test_calls_from_several_threads_each_get_their_own_turns_outcomes() -> None:
    """Calls made at once from several worker threads are told apart: each caller gets the
    outcome of its own turn, none waits for an answer that went to another."""
    executor = ProcessExecutor([_SlowEcho()])
    answers: dict[str, str] = {}
    errors: list[BaseException] = []

    def call(i: int) -> None:
        try:
            (outcome,) = executor.evaluate(["echo"], make_turn(i), 5.0)
            answers[make_turn(i).query] = str(outcome.score.explanation)
        except BaseException as error:
            errors.append(error)

    try:
        executor.evaluate(["echo"], make_turn(0), 30.0)  # started and warm
        callers = [threading.Thread(target=call, args=(i,)) for i in (1, 2, 3)]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join(10)
        assert errors == []
        assert answers == {make_turn(i).query: make_turn(i).query for i in (1, 2, 3)}
    finally:
        executor.close()


def test_close_kills_a_process_stuck_in_a_call_at_once_and_its_caller_fails() -> None:
    """close() waits only a moment for the process to end on its own: one stuck in a 10 s
    evaluation is killed within a second, and the call waiting on it fails."""
    executor = ProcessExecutor([_Sleeps(), AnswerLength()])
    errors: list[BaseException] = []

    def call() -> None:
        try:
            executor.evaluate(["sleeps"], make_turn(2), 30.0)
        except BaseException as error:
            errors.append(error)

    executor.evaluate(["answer_length"], make_turn(1), 30.0)  # started and warm
    caller = threading.Thread(target=call)
    caller.start()
    time.sleep(0.3)  # the call is in the process
    started = time.monotonic()
    executor.close()
    assert time.monotonic() - started < 0.9
    caller.join(5)
    assert [type(e) for e in errors] == [RuntimeError]
