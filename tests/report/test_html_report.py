"""The HTML report without a browser: one state per quote, the legend, skipped work said once."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwire import Context, RagTurn, Score, evaluate_many
from groundwire.demo import sample_turns
from groundwire.evaluators import (
    CitationSupport,
    QuotedSpans,
    QuoteVerification,
    ResponseGroundedness,
)
from groundwire.offline._results import TurnResult
from groundwire.offline.writers import HtmlReportWriter
from tests.report._dom import parse

EVALUATORS = ("quoted_spans", "quote_verification", "groundedness", "citation_support")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The report of the demo's sample turns, scored by all four evaluators with no judge."""
    with pytest.MonkeyPatch.context() as env:
        for name in ("GROUNDWIRE_JUDGE_MODEL", "GROUNDWIRE_JUDGE_BASE_URL", "OPENAI_API_KEY"):
            env.delenv(name, raising=False)
        evaluators = [
            QuotedSpans(),
            QuoteVerification(embedder=None),
            ResponseGroundedness(),
            CitationSupport(),
        ]
        turns = sample_turns()
        results = [
            TurnResult(turn, scores)
            for turn, scores in zip(turns, evaluate_many(turns, evaluators), strict=True)
        ]
    path = tmp_path_factory.mktemp("report") / "report.html"
    writer = HtmlReportWriter(path, EVALUATORS)
    for result in results:
        writer.write(result)
    writer.close()
    return path.read_text(encoding="utf-8")


def test_each_quote_has_one_state_whichever_evaluators_ran(report: str) -> None:
    """Every answer quote is one mark with one state: a verbatim miss that quote verification
    found is 'found, not verbatim', never both red and green."""
    dom = parse(report)
    states = {text: (css, state) for css, state, text in dom.answer_marks}
    assert len(states) == len(dom.answer_marks) == 8
    assert all(state is not None for _, state, _ in dom.answer_marks)
    assert states["The library no longer charges late fees."] == ("ok", "verbatim")
    ellipsis = "may be borrowed for three weeks … unless another member has placed a hold on them."
    assert states[ellipsis] == ("near", "not_verbatim")
    assert states["From nine in the morning  to eight in the evening on weekdays"][1] in (
        "verbatim",
        "not_verbatim",
    )
    invented = "all visitors must register their devices at the front desk"
    assert states[invented] == ("bad", "not_found")
    assert "found, not verbatim: ellipsis" in report


def test_an_invented_quotes_closest_window_is_neutral(report: str) -> None:
    """The window nearest an invented quote is a 'closest passage', never marked as a finding."""
    dom = parse(report)
    closest = [text for css, text in dom.context_marks if css == "closest"]
    assert len(closest) == 1
    assert all(css in ("ok", "near", "changed", "closest") for css, _ in dom.context_marks)
    assert "closest passage" in report


def test_the_legend_lists_every_state_once_at_the_top(report: str) -> None:
    """The legend names the four states and the closest passage, before the first turn."""
    dom = parse(report)
    assert dom.legend_states == ["verbatim", "not_verbatim", "changed", "not_found", "closest"]
    assert report.count('id="legend"') == 1
    assert report.index('id="legend"') < report.index('id="turn-1"')


def test_skipped_evaluators_are_said_once_with_no_chart(report: str) -> None:
    """Judges without a judge: one note naming both and how to enable them; no chart, no
    per-turn repetition of the hint."""
    dom = parse(report)
    assert dom.skipped == ["groundedness citation_support"]
    assert report.count("GROUNDWIRE_JUDGE_MODEL") == 1
    assert dom.figures == ["quoted_spans", "quote_verification"]
    assert all(bars == 10 for bars in dom.svg_rects)
    assert dom.external == []


def test_a_skipped_or_failed_evaluator_leaves_the_state_to_the_other() -> None:
    """With quote_verification skipped or failed, quoted_spans alone says verbatim or not found."""
    turn = RagTurn(
        query="q",
        contexts=[Context(text="The sky is blue over the harbour today.", id="a")],
        answer="It says “the sky is blue over the harbour” and “the sea is green today”.",
    )
    spans = QuotedSpans().evaluate(turn)
    for other in (
        Score.not_applicable("quote_verification", "skipped", "not set up"),
        Score.failed("quote_verification", "boom"),
    ):
        writer = HtmlReportWriter(Path("unused.html"), ["quoted_spans", "quote_verification"])
        writer.write(TurnResult(turn, {"quoted_spans": spans, "quote_verification": other}))
        dom = parse(writer.render())
        assert [(css, state) for css, state, _ in dom.answer_marks] == [
            ("ok", "verbatim"),
            ("bad", "not_found"),
        ]
        assert dom.context_marks == [("ok", "The sky is blue over the harbour")]
