"""`run_demo`: the whole demo in one call (what `groundwire demo` runs and prints).

1. `groundwire.configure(...)` with the LangChain integration and a local OTLP/JSON-lines file.
2. The demo's LangChain RAG app answers the questions; each turn is scored online
   (`quoted_spans` inline, the rest in the background; judges only when a model is configured).
3. `groundwire.shutdown()` drains the evaluations and flushes the trace file.
4. The trace file is re-scored offline (`groundwire.offline.rescore`) into an HTML report and
   a JSON-lines file of scores.

It configures OpenTelemetry globally, so it runs once per process.
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from groundwire.demo._questions import QUESTIONS
from groundwire.demo._trace_file import OnlineResults, read_online_results
from groundwire.offline import RescoreSummary, TurnResult, rescore
from groundwire.offline.writers import insert_steps, open_writer
from groundwire.runner import RunnerStats

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "DEFAULT_OUT",
    "DEFAULT_QUESTIONS",
    "DEMO_EVALUATORS",
    "DemoError",
    "DemoRun",
    "run_demo",
]

DEMO_EVALUATORS: Final = ("quoted_spans", "quote_verification", "groundedness", "citation_support")
"""Scored online and again offline; the last two are LLM judges (skipped without a model)."""
INLINE_EVALUATORS: Final = ("quoted_spans",)
"""Cheap enough to run in the app's thread, on the still-open turn span."""
DEFAULT_OUT: Final = Path("groundwire-out")
DEFAULT_QUESTIONS: Final = 6
TRACE_FILE: Final = "traces.jsonl"
REPORT_FILE: Final = "report.html"
SCORES_FILE: Final = "scores.jsonl"


class DemoError(RuntimeError):
    """The demo could not run: the LangChain integration is missing, or the app's model failed."""


@dataclass(frozen=True, slots=True)
class DemoRun:
    """What the demo did: the model, the answers, what was scored online and offline, the files."""

    model: str
    """A label for the model that answered (says "offline stand-in" when it was the stand-in)."""
    stand_in: bool
    judge_configured: bool
    questions: list[str]
    answers: list[str]
    trace_path: Path
    report_path: Path
    scores_path: Path
    online_stats: RunnerStats
    """The online runner's turn counts after the run."""
    online: OnlineResults
    """What online evaluation wrote to the trace file."""
    offline: RescoreSummary
    results: list[TurnResult]
    """Offline scores, one per question answered, in question order."""
    elapsed_s: float


def _require_langchain_integration() -> None:
    """Fail clearly when `groundwire-langchain` is not installed."""
    if importlib.util.find_spec("groundwire_langchain") is None:
        raise DemoError(
            "the demo needs the LangChain integration: pip install groundwire-langchain "
            "(in this repository: pip install -e integrations/langchain)"
        )


def _in_question_order(results: list[TurnResult], questions: Sequence[str]) -> list[TurnResult]:
    """The results in the order the questions were asked (file order for unmatched queries).

    A turn's query is missing when the environment hides inputs (`GROUNDWIRE_HIDE_INPUTS`).
    """
    rank = {question: index for index, question in enumerate(questions)}
    return sorted(results, key=lambda result: rank.get(result.turn.query or "", len(rank)))


def _answer_online(
    model: BaseChatModel,
    label: str,
    questions: Sequence[str],
    trace_path: Path,
    drain_s: float,
    step: Callable[[str], None],
) -> tuple[list[str], RunnerStats]:
    """Ask the questions with online evaluation configured; the answers and the runner's counts."""
    import groundwire
    from groundwire.demo.app import build_chain

    online = groundwire.configure(
        service_name="groundwire-demo",
        evaluators=list(DEMO_EVALUATORS),
        inline=list(INLINE_EVALUATORS),
        exporter="file",
        output_path=trace_path,
        instrument=["langchain"],
    )
    try:
        if "groundwire_langchain" not in online.instrumented:
            raise DemoError("groundwire.configure() could not instrument LangChain")
        chain = build_chain(model)
        answers: list[str] = []
        for index, question in enumerate(questions, 1):
            step(f"question {index}/{len(questions)}: {question}")
            try:
                answers.append(chain.invoke(question))
            except Exception as error:
                raise DemoError(
                    f"the app's model ({label}) failed on question {index} "
                    f"({type(error).__name__}): {error}"
                ) from error
        online.force_flush(drain_s)
        return answers, online.stats()
    finally:
        groundwire.shutdown(drain_s)


def _rescore_offline(
    trace_path: Path, questions: Sequence[str], outputs: Sequence[Path]
) -> tuple[RescoreSummary, list[TurnResult]]:
    """Re-score the trace file once and write the results to each output file."""
    summary = rescore([trace_path], list(DEMO_EVALUATORS), None)
    results = _in_question_order(summary.results or [], questions)
    for path in outputs:
        writer = open_writer(path, summary.evaluators)
        for result in results:
            writer.write(result)
        writer.close()
        if path.suffix == ".html":
            insert_steps(path, [trace_path], None)
    return summary, results


def run_demo(
    out_dir: str | os.PathLike[str] = DEFAULT_OUT,
    questions: int = DEFAULT_QUESTIONS,
    *,
    stand_in: bool = False,
    on_step: Callable[[str], None] | None = None,
) -> DemoRun:
    """Run the demo app, score it online and offline, write the files into `out_dir`.

    `questions` is how many of the bundled questions to ask (1 to `len(QUESTIONS)`);
    `stand_in` forces the offline stand-in model even when a real model is configured.
    Raises `DemoError` when the LangChain integration is missing, `out_dir` cannot be created or
    the app's model fails (online evaluation is shut down first), ValueError for a bad
    `questions`.
    """
    if isinstance(questions, bool) or not 1 <= questions <= len(QUESTIONS):
        raise ValueError(f"questions must be between 1 and {len(QUESTIONS)}, got {questions!r}")
    _require_langchain_integration()
    from groundwire.demo._standin import OfflineStandInChatModel
    from groundwire.demo.app import choose_model
    from groundwire.judges import JudgeConfig

    step = on_step or (lambda message: None)
    started = time.perf_counter()
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise DemoError(f"cannot use {out} as the output directory: {error}") from error
    trace_path, report_path, scores_path = out / TRACE_FILE, out / REPORT_FILE, out / SCORES_FILE
    trace_path.unlink(missing_ok=True)  # the file exporter appends
    asked = list(QUESTIONS[:questions])
    model, label = choose_model(stand_in=stand_in)
    judge_configured = JudgeConfig.from_env() is not None
    drain_s = 120.0 if judge_configured else 30.0

    answers, online_stats = _answer_online(model, label, asked, trace_path, drain_s, step)
    online_results = read_online_results(trace_path)
    step(f"re-scoring {trace_path} offline")
    summary, results = _rescore_offline(trace_path, asked, (report_path, scores_path))
    return DemoRun(
        model=label,
        stand_in=isinstance(model, OfflineStandInChatModel),
        judge_configured=judge_configured,
        questions=asked,
        answers=answers,
        trace_path=trace_path,
        report_path=report_path,
        scores_path=scores_path,
        online_stats=online_stats,
        online=online_results,
        offline=summary,
        results=results,
        elapsed_s=time.perf_counter() - started,
    )
