"""`.html` output: a self-contained report (inline CSS and SVG, no scripts, no network).

It shows, per evaluator, the distribution of scores (a histogram drawn as inline SVG) with counts
of turns it did not apply to or failed on; then the worst turns first (lowest score of any
evaluator), each with its scores, its answer with the quotes marked, and its contexts with each
quote highlighted where an evaluator located it (green: verified, red: low confidence), and for
each quote that differs from its source a diff: source words struck, quote words marked, the
kind of each edit on hover, and what a misquote changed (number, negation, modality, entity).
Memory is bounded: histograms are bin counts and only the `worst` lowest-scoring turns are kept.
"""

from __future__ import annotations

import heapq
import html
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from groundwire._types import RagTurn, Score
from groundwire.offline._results import TurnResult

__all__ = ["HtmlReportWriter"]

_BINS: Final = 10
_PARTIAL: Final = " <strong>The run was interrupted: this report is partial.</strong>"
_STYLE: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}
.summary td,.summary th,.scores td,.scores th{padding:.2em .8em;text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:1.5em}.plot{border:1px solid #eee;padding:.5em}
.turn{border:1px solid #ddd;border-radius:6px;margin:1.2em 0;padding:.8em 1em}
.ids{color:#777;font-family:monospace;font-size:.85em}
.text{white-space:pre-wrap;background:#fafafa;border:1px solid #eee;padding:.5em}
mark.ok{background:#c8f0c8}mark.bad{background:#ffc4c4}mark.quote{background:#fff1a8}
.na{color:#999}.err{color:#b00}
.diff{font-family:ui-monospace,monospace;font-size:.9em;margin:.3em 0 .8em}
.diff del{background:#ffd7d7;color:#700}.diff ins{background:#d4f5d4;text-decoration:none}
.diff .meaning{outline:2px solid #c00}.why{color:#b00;font-weight:600}
"""


@dataclass(slots=True)
class _Distribution:
    """One evaluator's histogram (bin counts), mean, and not-applicable / failed counts."""

    bins: list[int] = field(default_factory=lambda: [0] * _BINS)
    scored: int = 0
    total: float = 0.0
    not_applicable: int = 0
    failed: int = 0

    def add(self, score: Score | None) -> None:
        """Count one score."""
        if score is None or score.value is None:
            self.not_applicable += 1
        elif math.isnan(score.value):
            self.failed += 1
        else:
            self.scored += 1
            self.total += score.value
            self.bins[min(int(score.value * _BINS), _BINS - 1)] += 1


def _escape(text: Any) -> str:
    """HTML-escaped text (None as empty)."""
    return html.escape("" if text is None else str(text))


def _merged(marks: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    """One mark per distinct span: red when any evaluator doubts it, titles joined."""
    by_span: dict[tuple[int, int], tuple[str, list[str]]] = {}
    for start, end, css, title in marks:
        previous, titles = by_span.get((start, end), ("ok", []))
        by_span[(start, end)] = ("bad" if "bad" in (css, previous) else css, [*titles, title])
    return sorted((s, e, css, "; ".join(t)) for (s, e), (css, t) in by_span.items())


def _highlight(text: str, marks: list[tuple[int, int, str, str]]) -> str:
    """`text` escaped, with non-overlapping `(start, end, css_class, title)` spans marked."""
    out: list[str] = []
    position = 0
    for start, end, css, title in marks:
        if start < position or end <= start or end > len(text):
            continue
        out.append(_escape(text[position:start]))
        marked = _escape(text[start:end])
        out.append(f'<mark class="{css}" title="{_escape(title)}">{marked}</mark>')
        position = end
    out.append(_escape(text[position:]))
    return "".join(out)


def _document_names(turn: RagTurn) -> list[str]:
    """Each context's name as quote_verification reports it in `source_doc`."""
    names: list[str] = []
    seen: set[str] = set()
    for index, context in enumerate(turn.contexts):
        name = context.id or f"doc_{index}"
        if name in seen:
            name = f"{name}#{index}"
        seen.add(name)
        names.append(name)
    return names


def _marks(result: TurnResult) -> tuple[list[Any], list[list[Any]]]:
    """Marks for the answer and for each context, from the evaluators' quote details."""
    turn = result.turn
    answer: list[tuple[int, int, str, str]] = []
    contexts: list[list[tuple[int, int, str, str]]] = [[] for _ in turn.contexts]
    names = {name: index for index, name in enumerate(_document_names(turn))}
    for evaluator, score in result.scores.items():
        for row in score.details.get("quotes") or ():
            if not isinstance(row, dict):
                continue
            ok = not row.get("low_confidence", True)
            css = "ok" if ok else "bad"
            title = f"{evaluator}: match ratio {row.get('match_ratio')}"
            if row.get("low_confidence_reason"):
                title += f" ({row['low_confidence_reason']})"
            a_start, a_end = row.get("answer_start"), row.get("answer_end")
            if isinstance(a_start, int) and isinstance(a_end, int):
                answer.append((a_start, a_end, css, title))
            index = names.get(row.get("source_doc"))  # type: ignore[arg-type]
            start, end = row.get("doc_start"), row.get("doc_end")
            if index is not None and isinstance(start, int) and isinstance(end, int):
                contexts[index].append((start, end, css, title))
        for row in score.details.get("spans") or ():
            if not isinstance(row, dict):
                continue
            css = "ok" if row.get("matched") else "bad"
            title = f"{evaluator}: {'found verbatim' if row.get('matched') else 'not found'}"
            start, end = row.get("start"), row.get("end")
            if isinstance(start, int) and isinstance(end, int):
                answer.append((start, end, css, title))
            index = row.get("context_index")
            quote = row.get("text")
            if isinstance(index, int) and 0 <= index < len(contexts) and isinstance(quote, str):
                found = turn.contexts[index].text.casefold().find(quote.casefold())
                if found >= 0:
                    contexts[index].append((found, found + len(quote), css, title))
    return _merged(answer), [_merged(marks) for marks in contexts]


def _int(value: Any) -> int | None:
    """The value when it is an int (bools excluded), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _diff_html(row: dict[str, Any], text: str) -> str:
    """The source passage with the quote's edits: source words struck, quote words marked."""
    edits = [e for e in row.get("edits") or () if isinstance(e, dict)]
    start, end = _int(row.get("doc_start")), _int(row.get("doc_end"))
    if not edits or start is None or end is None:
        return ""
    changed = [
        (_int(c.get("source_start")), _int(c.get("source_end")), str(c.get("kind")))
        for c in row.get("meaning_changes") or ()
        if isinstance(c, dict)
    ]
    placed = []
    for edit in edits:
        lo, hi = _int(edit.get("source_start")), _int(edit.get("source_end"))
        if lo is None or hi is None or not 0 <= lo <= hi <= len(text):
            return ""
        placed.append((lo, hi, edit))
    placed.sort(key=lambda item: (item[0], item[1]))
    first = min(start, placed[0][0])
    out: list[str] = []
    position = first
    for lo, hi, edit in placed:
        if lo < position:
            continue
        out.append(_escape(text[position:lo]))
        kinds = [k for a, b, k in changed if a is not None and b is not None and a <= lo <= b]
        css = ' class="meaning"' if kinds else ""
        label = f"{edit.get('kind')}" + (f": {', '.join(kinds)} changed" if kinds else "")
        if hi > lo:
            out.append(f'<del title="{_escape(label)}"{css}>{_escape(text[lo:hi])}</del>')
        quoted = str(edit.get("quote_text") or "")
        if quoted:
            out.append(f'<ins title="{_escape(label)}"{css}>{_escape(quoted)}</ins>')
        position = hi
    out.append(_escape(text[position : max(end, position)]))
    why = row.get("low_confidence_reason") if row.get("meaning_changes") else None
    reason = f' <span class="why">{_escape(why)}</span>' if why else ""
    return f'<div class="diff">{"".join(out)}{reason}</div>'


def _diffs(result: TurnResult) -> list[str]:
    """One diff per quote that an evaluator located with word edits."""
    names = {name: index for index, name in enumerate(_document_names(result.turn))}
    diffs: list[str] = []
    for evaluator, score in result.scores.items():
        for row in score.details.get("quotes") or ():
            if not isinstance(row, dict) or not row.get("edits"):
                continue
            index = names.get(row.get("source_doc"))  # type: ignore[arg-type]
            if index is None:
                continue
            diff = _diff_html(row, result.turn.contexts[index].text)
            if diff:
                quote = _escape(row.get("quote"))
                diffs.append(f"<p>{_escape(evaluator)}: “{quote}”</p>{diff}")
    return diffs


def _histogram_svg(name: str, dist: _Distribution) -> str:
    """An inline SVG histogram of one evaluator's scores over [0, 1]."""
    width, height, pad = 300, 130, 22
    top = max(dist.bins) or 1
    bar = (width - 2 * pad) / _BINS
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{_escape(name)} score distribution">'
    ]
    for index, count in enumerate(dist.bins):
        h = (height - 2 * pad) * count / top
        x = pad + index * bar
        y = height - pad - h
        low, high = index / _BINS, (index + 1) / _BINS
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
            f'fill="#4a7bd0"><title>{low:.1f}-{high:.1f}: {count}</title></rect>'
        )
        if count:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{y - 3:.1f}" font-size="9" '
                f'text-anchor="middle">{count}</text>'
            )
    base = height - pad
    parts.append(f'<line x1="{pad}" y1="{base}" x2="{width - pad}" y2="{base}" stroke="#444"/>')
    for value in (0.0, 0.5, 1.0):
        x = pad + value * (width - 2 * pad)
        parts.append(
            f'<text x="{x:.1f}" y="{base + 14}" font-size="10" text-anchor="middle">'
            f"{value:g}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


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
            f"<title>{_escape(self._title)}</title><style>{_STYLE}</style></head><body>",
            f"<h1>{_escape(self._title)}</h1>",
            f"<p>{self._turns} turns scored, {now}.{_PARTIAL if interrupted else ''}</p>",
            '<h2 id="distributions">Score distributions</h2>',
            '<table class="summary"><tr><th>evaluator</th><th>scored</th><th>mean</th>'
            "<th>not applicable</th><th>failed</th></tr>",
        ]
        for name, dist in self._dists.items():
            mean = f"{dist.total / dist.scored:.3f}" if dist.scored else "–"
            out.append(
                f"<tr><td>{_escape(name)}</td><td>{dist.scored}</td><td>{mean}</td>"
                f"<td>{dist.not_applicable}</td><td>{dist.failed}</td></tr>"
            )
        out.append('</table><div class="plots">')
        for name, dist in self._dists.items():
            out.append(
                f'<figure class="plot"><figcaption>{_escape(name)}</figcaption>'
                f"{_histogram_svg(name, dist)}</figure>"
            )
        out.append("</div>")
        ranked = sorted(self._worst, key=lambda item: (-item[0], item[1]))
        out.append(f'<h2 id="worst">Worst turns ({len(ranked)} lowest-scoring, worst first)</h2>')
        out.append(
            '<p>Quotes are marked where evaluators located them: <mark class="ok">verified</mark>'
            ' or <mark class="bad">not found / low confidence</mark> (hover for the evaluator and '
            "its match ratio). Contexts with a located quote are expanded.</p>"
        )
        if self._unscored:
            out.append(f'<p class="na">{self._unscored} turns had no computed score.</p>')
        for rank, (_, _, result) in enumerate(ranked, start=1):
            out.append(self._turn_html(rank, result))
        out.append("</body></html>")
        return "\n".join(out)

    def _turn_html(self, rank: int, result: TurnResult) -> str:
        """One worst turn: ids, scores, the answer and contexts with quotes highlighted."""
        turn = result.turn
        answer_marks, context_marks = _marks(result)
        rows = []
        for name, score in result.scores.items():
            value = score.value
            shown = (
                '<span class="na">n/a</span>'
                if value is None
                else '<span class="err">failed</span>'
                if math.isnan(value)
                else f"{value:.3f}"
            )
            note = score.error or score.explanation
            rows.append(
                f"<tr><td>{_escape(name)}</td><td>{shown}</td><td>{_escape(score.label)}</td>"
                f"<td>{_escape(note)}</td></tr>"
            )
        parts = [
            f'<section class="turn" id="turn-{rank}">',
            f"<h3>#{rank}: {_escape(turn.query)}</h3>",
            f'<div class="ids">trace {_escape(turn.trace_id)} · span {_escape(turn.span_id)}</div>',
            f'<table class="scores">{"".join(rows)}</table>',
            "<h4>Answer</h4>",
            f'<div class="text answer">{_highlight(turn.answer, answer_marks)}</div>',
        ]
        diffs = _diffs(result)
        if diffs:
            parts.append("<h4>Quotes that differ from their source</h4>")
            parts.append(
                '<p class="na">Source words <del>struck</del>, quote words '
                "<ins>marked</ins>; outlined: a change of meaning (hover for the kind).</p>"
            )
            parts.extend(diffs)
        for index, (context, marks) in enumerate(zip(turn.contexts, context_marks, strict=True)):
            label = context.id or f"context {index}"
            opened = " open" if marks else ""
            parts.append(
                f"<details{opened}><summary>Context {index}: {_escape(label)} "
                f"({len(marks)} quote{'s' if len(marks) != 1 else ''} located)</summary>"
                f'<div class="text context">{_highlight(context.text, marks)}</div></details>'
            )
        parts.append("</section>")
        return "\n".join(parts)
