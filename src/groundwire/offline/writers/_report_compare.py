"""The report's "Compared with a baseline" section, and putting it into a written report.

The section shows per evaluator both runs' means and their difference with the two histograms
side by side (baseline grey, this run blue, and said in words), then the turns that got worse
(largest drop first), then those that got better, and how many turns were in only one run.
`HtmlReportWriter` leaves `COMPARISON_SLOT` where the section goes; `insert_comparison` fills it
after the run (the writer is opened by `rescore`, the comparison is fed by its results hook).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from groundwire.offline.writers._baseline import Change, Comparison, EvaluatorShift
from groundwire.offline.writers._report_style import BINS, axis_svg, escape

__all__ = ["COMPARISON_SLOT", "comparison_html", "insert_comparison"]

COMPARISON_SLOT: Final = "<!-- groundwire:comparison -->"
"""Where a comparison section goes in a written report."""


def _paired_svg(name: str, shift: EvaluatorShift) -> str:
    """Both runs' histograms over [0, 1] in one inline SVG: baseline grey, this run blue."""
    width, height, pad = 320, 130, 22
    top = max(*shift.before, *shift.after) or 1
    slot = (width - 2 * pad) / BINS
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(name)}: baseline and this run">'
    ]
    for index in range(BINS):
        for offset, counts, fill, run in (
            (0.0, shift.before, "#999", "baseline"),
            (0.5, shift.after, "#0072b2", "this run"),
        ):
            h = (height - 2 * pad) * counts[index] / top
            x = pad + index * slot + offset * (slot - 2)
            low, high = index / BINS, (index + 1) / BINS
            parts.append(
                f'<rect x="{x:.1f}" y="{height - pad - h:.1f}" width="{(slot - 2) / 2:.1f}" '
                f'height="{h:.1f}" fill="{fill}"><title>{run} {low:.1f}-{high:.1f}: '
                f"{counts[index]}</title></rect>"
            )
    return "".join(parts) + axis_svg(width, height, pad)


def _number(value: float | None, signed: bool = False) -> str:
    """A mean or difference for the table ("–" when there is none)."""
    if value is None:
        return "–"
    return f"{value:+.3f}" if signed else f"{value:.3f}"


def _changes_table(changes: list[Change], kind: str) -> str:
    """The turns that got worse or better, one row each."""
    if not changes:
        return f'<p class="na">No turn got {kind}.</p>'
    rows = [
        f'<tr data-delta="{change.delta:.6f}"><td>{escape(change.query)}</td>'
        f"<td>{escape(change.evaluator)}</td><td>{change.before:.3f}</td>"
        f"<td>{change.after:.3f}</td><td>{change.delta:+.3f}</td>"
        f'<td class="ids">{escape(change.key[0])}</td></tr>'
        for change in changes
    ]
    return (
        f'<table class="summary changes {kind}"><tr><th>question</th><th>evaluator</th>'
        "<th>baseline</th><th>this run</th><th>change</th><th>trace</th></tr>"
        f"{''.join(rows)}</table>"
    )


def comparison_html(comparison: Comparison) -> str:
    """The whole comparison section."""
    out = [
        '<section class="comparison" id="comparison">',
        "<h2>Compared with a baseline</h2>",
        f"<p>Baseline: <code>{escape(comparison.baseline.path)}</code>. "
        f"{comparison.matched} turns in both runs (matched by trace and span id): "
        f"<strong>{comparison.worse} worse</strong>, {comparison.better} better; "
        f'<span class="only">{comparison.only_here} only in this run, '
        f"{comparison.only_baseline} only in the baseline</span> (not compared).</p>",
        '<table class="summary"><tr><th>evaluator</th><th>baseline mean</th>'
        "<th>this run mean</th><th>difference</th></tr>",
    ]
    shown = {n: s for n, s in comparison.shifts.items() if s.before_n or s.after_n}
    for name, shift in shown.items():
        out.append(
            f"<tr><td>{escape(name)}</td><td>{_number(shift.before_mean)}</td>"
            f"<td>{_number(shift.after_mean)}</td>"
            f"<td>{_number(shift.difference, signed=True)}</td></tr>"
        )
    out.append('</table><p class="na">Bars: baseline grey (left), this run blue (right).</p>')
    out.append('<div class="plots">')
    for name, shift in shown.items():
        out.append(
            f'<figure class="plot"><figcaption>{escape(name)}: baseline and this run'
            f"</figcaption>{_paired_svg(name, shift)}</figure>"
        )
    out.append("</div>")
    out.append('<h3 id="worsened">Turns that got worse (largest drop first)</h3>')
    out.append(_changes_table(comparison.worsened(), "worse"))
    out.append('<h3 id="improved">Turns that got better</h3>')
    out.append(_changes_table(comparison.improved(), "better"))
    out.append("</section>")
    return "\n".join(out)


def insert_comparison(report: str | os.PathLike[str], section: str) -> None:
    """Put `section` into a written HTML report at its comparison slot (replacing the file
    atomically); ValueError when the file has no slot (not a groundwire report)."""
    path = Path(report)
    text = path.read_text(encoding="utf-8")
    if COMPARISON_SLOT not in text:
        raise ValueError(f"{path}: not a groundwire HTML report (no place for a comparison)")
    partial = path.with_name(f".{path.name}.comparison")
    partial.write_text(text.replace(COMPARISON_SLOT, section, 1), encoding="utf-8")
    os.replace(partial, path)
