"""`evaluate`, `evaluate_many` and the registry, with sync, async and failing evaluators."""

from __future__ import annotations

import asyncio
import math
import threading

import pytest

import groundwire
from groundwire import RagTurn, Score, UnknownEvaluatorError, evaluate, evaluate_many


class AnswerLength:
    """A sync evaluator: 1.0 when the answer is non-empty."""

    name = "answer_length"

    def evaluate(self, turn: RagTurn) -> Score:
        return Score(name=self.name, value=1.0 if turn.answer else 0.0)


class AsyncContextCount:
    """An async evaluator that really awaits."""

    name = "context_count"

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    async def aevaluate(self, turn: RagTurn) -> Score:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        await asyncio.sleep(0.01)
        with self._lock:
            self.in_flight -= 1
        return Score(name=self.name, value=min(1.0, len(turn.contexts) / 2))


class Exploding:
    """An evaluator that always raises."""

    name = "exploding"

    def evaluate(self, turn: RagTurn) -> Score:
        raise RuntimeError("boom")


class WrongReturn:
    """An evaluator that returns something other than a Score."""

    name = "wrong_return"

    def evaluate(self, turn: RagTurn) -> float:
        return 1.0


TURN = RagTurn(query="q", contexts=["a", "b"], answer="yes")


def test_sync_and_async_evaluators_from_sync_code() -> None:
    """Both kinds run from plain sync code and are keyed by name."""
    scores = evaluate(TURN, [AnswerLength(), AsyncContextCount()])
    assert scores["answer_length"].value == 1.0
    assert scores["context_count"].value == 1.0


def test_evaluate_inside_a_running_loop() -> None:
    """evaluate works when called from code already running an event loop."""

    async def main() -> dict[str, Score]:
        return evaluate(TURN, [AsyncContextCount()])

    assert asyncio.run(main())["context_count"].value == 1.0


def test_failing_evaluator_becomes_an_error_score_and_others_run() -> None:
    """An evaluator that raises gives a NaN score with the error; the rest still score."""
    scores = evaluate(TURN, [Exploding(), AnswerLength(), WrongReturn()])
    failed = scores["exploding"].value
    assert failed is not None and math.isnan(failed)
    assert scores["exploding"].error == "RuntimeError: boom"
    assert scores["answer_length"].value == 1.0
    assert "expected a Score" in (scores["wrong_return"].error or "")


def test_evaluate_many_keeps_order_and_limits_concurrency() -> None:
    """Results come back in turn order, with no more than `concurrency` evaluations in flight."""
    counter = AsyncContextCount()
    turns = [RagTurn(query=str(i), contexts=["x"] * (i % 3), answer="a") for i in range(30)]
    results = evaluate_many(turns, [counter], concurrency=4)
    assert [r["context_count"].value for r in results] == [min(1.0, (i % 3) / 2) for i in range(30)]
    assert 1 < counter.peak <= 4


def test_evaluate_many_accepts_mappings_and_names_the_bad_one() -> None:
    """Turns may be mappings; an invalid one is reported with its index."""
    with pytest.raises(ValueError, match=r"turns\[1\]"):
        evaluate_many([{"query": "q", "answer": "a"}, {"query": "q"}], [AnswerLength()])


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_evaluate_many_rejects_bad_concurrency(bad: object) -> None:
    """concurrency must be a positive int."""
    with pytest.raises(ValueError, match="concurrency"):
        evaluate_many([TURN], [AnswerLength()], concurrency=bad)  # type: ignore[arg-type]


def test_unknown_evaluator_name_lists_known_ones() -> None:
    """An unknown name is an error that lists the registered names."""
    with pytest.raises(UnknownEvaluatorError) as caught:
        groundwire.get_evaluator("groundednes")
    assert "groundedness" in str(caught.value)
    assert "quoted_spans" in str(caught.value)


def test_registered_evaluator_is_found_by_name() -> None:
    """register_evaluator makes a factory usable by name, and refuses to overwrite silently."""
    groundwire.register_evaluator("answer_length_test", AnswerLength)
    try:
        assert "answer_length_test" in groundwire.available_evaluators()
        assert isinstance(groundwire.get_evaluator("answer_length_test"), AnswerLength)
        with pytest.raises(ValueError, match="already registered"):
            groundwire.register_evaluator("answer_length_test", AnswerLength)
        with pytest.raises(ValueError, match="already registered"):
            groundwire.register_evaluator("quoted_spans", AnswerLength)
    finally:
        from groundwire import _registry

        _registry._registered.pop("answer_length_test", None)


def test_duplicate_evaluator_names_are_rejected() -> None:
    """Two evaluators with one name would overwrite each other's scores: an error."""
    with pytest.raises(ValueError, match="answer_length"):
        evaluate(TURN, [AnswerLength(), AnswerLength()])


def test_non_evaluator_is_rejected_with_its_position() -> None:
    """Something that is neither a name nor an evaluator is a TypeError naming its index."""
    with pytest.raises(TypeError, match=r"evaluators\[1\]"):
        evaluate(TURN, [AnswerLength(), 42])  # type: ignore[list-item]


class CallerThread:
    """A sync evaluator that records which thread ran it."""

    name = "caller_thread"

    def __init__(self) -> None:
        self.threads: set[int] = set()

    def evaluate(self, turn: RagTurn) -> Score:
        self.threads.add(threading.get_ident())
        return Score(name=self.name, value=1.0)


def test_evaluate_many_runs_sync_evaluators_in_the_calling_thread() -> None:
    """With only sync evaluators, evaluate_many scores in the caller's thread (no thread hops)."""
    recorder = CallerThread()
    evaluate_many([TURN] * 5, [recorder, AnswerLength()])
    assert recorder.threads == {threading.get_ident()}


def test_aevaluate_many_keeps_sync_evaluators_off_the_event_loop() -> None:
    """From async code, sync evaluators run in worker threads so the loop stays responsive."""
    recorder = CallerThread()

    async def main() -> int:
        await groundwire.aevaluate_many([TURN] * 3, [recorder])
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert loop_thread not in recorder.threads
