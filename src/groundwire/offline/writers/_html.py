"""`.html` output: a self-contained report (inline CSS and SVG, no scripts, no network).

At the top: how many turns, which evaluators were skipped and how to turn them on (said once),
the colour legend for quotes, and per evaluator the distribution of scores (a histogram drawn as
inline SVG, only for evaluators that gave scores) with counts of turns it did not apply to or
failed on. Then the worst turns first (lowest score of any evaluator), each with its scores, its
answer with every quote marked in one state (`_quote_state`: verified verbatim, found but not
verbatim, changed meaning, not found) and labelled in words, its contexts with each quote marked
where it was found (a not-found quote's closest window in a neutral style), and for each quote
that differs from its source a diff: source words struck, quote words marked, the kind of each
edit on hover, and what a misquote changed (number, negation, modality, entity).
Memory is bounded: histograms are bin counts and only the `worst` lowest-scoring turns are kept.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from groundwire._types import Score
from groundwire.offline._results import ScoreCounts, TurnResult, score_value
from groundwire.offline.writers._report_compare import COMPARISON_SLOT
from groundwire.offline.writers._report_quotes import (
    answer_html,
    context_html,
    context_marks,
    diffs_html,
    turn_quotes,
)
from groundwire.offline.writers._report_steps import steps_slot
from groundwire.offline.writers._report_style import (
    BINS,
    STYLE,
    escape,
    histogram_svg,
    legend_html,
)

__all__ = ["HtmlReportWriter"]

_PARTIAL: Final = " <strong>The run was interrupted: this report is partial.</strong>"
_SKIPPED: Final = "skipped"
"""The label of a score that was not computed because its evaluator was not set up."""


@dataclass(slots=True)
class _Distribution(ScoreCounts):
    """One evaluator's histogram (bin counts) beside its counts by outcome (`ScoreCounts`).

    `skip_reason` is the first skipped score's explanation (how to turn the evaluator on)."""

    bins: list[int] = field(default_factory=lambda: [0] * BINS)
    skip_reason: str | None = None

    def add(self, score: Score | None) -> None:
        """Count one score."""
        outcome, value = self.count(score), score_value(score)
        if outcome == "skipped" and score is not None:
            self.skip_reason = self.skip_reason or score.explanation or score.error
        elif value is not None:  # scored
            self.bins[min(int(value * BINS), BINS - 1)] += 1


def _score_cell(score: Score) -> str:
    """A score's value for a turn's table: the number, n/a or failed."""
    if score.value is None:
        return '<span class="na">n/a</span>'
    if math.isnan(score.value):
        return '<span class="err">failed</span>'
    return f"{score.value:.3f}"


def skipped_html(dists: dict[str, _Distribution], turns: int) -> str:
    """One line per reason evaluators were skipped (e.g. no judge configured), naming them."""
    by_reason: dict[str, list[str]] = {}
    for name, dist in dists.items():
        if dist.skipped:
            by_reason.setdefault(dist.skip_reason or "not set up", []).append(name)
    lines = []
    for reason, names in by_reason.items():
        counts = {dists[name].skipped for name in names}
        on = f"all {turns} turns" if counts == {turns} else "some turns"
        lines.append(
            f'<p class="skipped" data-skipped="{escape(" ".join(names))}"><strong>Skipped: '
            f"{escape(', '.join(names))}</strong> (on {on}, so no scores and no chart): "
            f"{escape(reason)}</p>"
        )
    return "\n".join(lines)


class HtmlReportWriter:
    """Collects distributions and the worst turns; writes the report on close."""

    def __init__(
        self,
        path: Path,
        evaluators: Sequence[str],
        *,
        append: bool = False,
        worst: int = 50,
        title: str = "groundwire re-scoring report",
    ) -> None:
        if append:
            raise ValueError(f"{path}: --resume cannot append to an .html report; use .jsonl")
        self._path = path
        self._evaluators = list(evaluators)
        self._title = title
        self._keep = worst
        self._dists = {name: _Distribution() for name in self._evaluators}
        self._worst: list[tuple[float, int, TurnResult]] = []
        self._counter = itertools.count()
        self._turns = 0
        self._unscored = 0

    def write(self, result: TurnResult) -> None:
        """Count the turn's scores and keep it if it is among the worst so far."""
        self._turns += 1
        for name in self._evaluators:
            self._dists[name].add(result.scores.get(name))
        worst = result.worst()
        if worst is None:
            self._unscored += 1
            return
        heapq.heappush(self._worst, (-worst, next(self._counter), result))
        if len(self._worst) > self._keep:
            heapq.heappop(self._worst)

    def close(self, *, interrupted: bool = False) -> None:
        """Write the report file."""
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._path.write_text(self.render(interrupted=interrupted), encoding="utf-8")

    def render(self, *, interrupted: bool = False) -> str:
        """The whole report as one HTML document."""
        now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        out = [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(self._title)}</title><style>{STYLE}</style></head><body>",
            f"<h1>{escape(self._title)}</h1>",
            f"<p>{self._turns} turns scored, {now}.{_PARTIAL if interrupted else ''}</p>",
            skipped_html(self._dists, self._turns),
            legend_html(),
            *self._distributions(),
            COMPARISON_SLOT,
        ]
        ranked = sorted(self._worst, key=lambda item: (-item[0], item[1]))
        out.append(f'<h2 id="worst">Worst turns ({len(ranked)} lowest-scoring, worst first)</h2>')
        out.append('<p class="na">Contexts with a located quote are expanded.</p>')
        if self._unscored:
            turns = "1 turn" if self._unscored == 1 else f"{self._unscored} turns"
            out.append(f'<p class="na">{turns} had no computed score.</p>')
        for rank, (_, _, result) in enumerate(ranked, start=1):
            out.append(self._turn_html(rank, result))
        out.append("</body></html>")
        return "\n".join(out)

    def _distributions(self) -> list[str]:
        """The summary table and one histogram per evaluator that gave scores."""
        out = [
            '<h2 id="distributions">Score distributions</h2>',
            '<table class="summary"><tr><th>evaluator</th><th>scored</th><th>mean</th>'
            "<th>not applicable</th><th>skipped</th><th>failed</th></tr>",
        ]
        for name, dist in self._dists.items():
            mean = "–" if dist.mean is None else f"{dist.mean:.3f}"
            out.append(
                f"<tr><td>{escape(name)}</td><td>{dist.scored}</td><td>{mean}</td>"
                f"<td>{dist.not_applicable}</td><td>{dist.skipped}</td><td>{dist.failed}</td></tr>"
            )
        out.append('</table><div class="plots">')
        for name, dist in self._dists.items():
            if dist.scored:
                out.append(
                    f'<figure class="plot"><figcaption>{escape(name)}</figcaption>'
                    f"{histogram_svg(name, dist.bins)}</figure>"
                )
        out.append("</div>")
        return out

    def _turn_html(self, rank: int, result: TurnResult) -> str:
        """One worst turn: ids, scores, the answer and contexts with quotes marked."""
        turn = result.turn
        quotes = turn_quotes(result)
        rows = [
            f"<tr><td>{escape(name)}</td><td>{_score_cell(score)}</td>"
            f"<td>{escape(score.label)}</td>"
            f"<td>{escape(score.error or score.explanation)}</td></tr>"
            for name, score in result.scores.items()
            if not (score.value is None and score.label == _SKIPPED)
        ]
        parts = [
            f'<section class="turn" id="turn-{rank}">',
            f"<h3>#{rank}: {escape(turn.query)}</h3>",
            f'<div class="ids">trace {escape(turn.trace_id)} · span {escape(turn.span_id)}</div>',
            f'<table class="scores">{"".join(rows)}</table>',
            steps_slot(turn.trace_id, turn.span_id),
            "<h4>Answer</h4>",
            f'<div class="text answer">{answer_html(turn.answer, quotes)}</div>',
        ]
        diffs = diffs_html(turn, quotes)
        if diffs:
            parts.append("<h4>Quotes that differ from their source</h4>")
            parts.append(
                '<p class="na">Source words <del>struck</del>, quote words '
                "<ins>marked</ins>; outlined: a change of meaning (hover for the kind).</p>"
            )
            parts.extend(diffs)
        for index, context in enumerate(turn.contexts):
            marks = context_marks(quotes, index)
            located = sum(mark[2] != "closest" for mark in marks)
            label = context.id or f"context {index}"
            opened = " open" if marks else ""
            parts.append(
                f"<details{opened}><summary>Context {index}: {escape(label)} "
                f"({located} quote{'s' if located != 1 else ''} located)</summary>"
                f'<div class="text context">{context_html(context.text, marks)}</div></details>'
            )
        parts.append("</section>")
        return "\n".join(parts)
