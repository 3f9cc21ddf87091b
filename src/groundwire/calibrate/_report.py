"""A calibration report as plain data (`report_dict`), a JSON file or a self-contained HTML page."""

from __future__ import annotations

import html
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Final

from groundwire.calibrate._agreement import Agreement, Figure
from groundwire.calibrate._calibrate import CalibrationReport

__all__ = [
    "REPORT_SUFFIXES",
    "report_dict",
    "series_name",
    "show",
    "show_threshold",
    "write_report",
]

REPORT_SUFFIXES: Final = (".json", ".html")
"""The formats `--out` can write, named by the file's extension."""

_CONTEXT_CHARS: Final = 600
"""Each context is cut to this many characters in a report (the turn's trace has all of it)."""


def _agreement(row: Agreement) -> dict[str, Any]:
    """One agreement as JSON-ready data (disagreements flattened, contexts cut)."""
    data = asdict(row)
    data["disagreements"] = [
        {
            "trace_id": d.pair.trace_id,
            "span_id": d.pair.span_id,
            "label": d.pair.label,
            "value": d.pair.value,
            "judged": d.judged,
            "gap": d.gap,
            "query": d.pair.query,
            "answer": d.pair.answer,
            "contexts": [text[:_CONTEXT_CHARS] for text in d.pair.contexts],
            "explanation": d.pair.explanation,
            "label_at": d.pair.where,
        }
        for d in row.disagreements
    ]
    return data


def report_dict(report: CalibrationReport) -> dict[str, Any]:
    """The report as JSON-ready data: agreements, ceilings, unmatched labels."""
    return {
        "labels": report.labels,
        "matched_labels": report.matched,
        "agreements": [_agreement(row) for row in report.agreements],
        "ceilings": [asdict(ceiling) for ceiling in report.ceilings],
        "unmatched_labels": [
            {
                "at": miss.label.where,
                "trace_id": miss.label.trace_id,
                "span_id": miss.label.span_id,
                "evaluator": miss.label.evaluator,
                "reason": miss.reason,
            }
            for miss in report.unmatched
        ],
    }


def show(figure: Figure | None) -> str:
    """`0.62 [0.48, 0.75]`, or `–` when undefined."""
    if figure is None or figure.value is None:
        return "–"
    if figure.low is None or figure.high is None:
        return f"{figure.value:.2f}"
    return f"{figure.value:.2f} [{figure.low:.2f}, {figure.high:.2f}]"


def show_threshold(row: Agreement) -> str:
    """`0.40 [0.35, 0.60] (acc 1.00)`, or `` when the labels are not pass/fail."""
    t = row.threshold
    if t is None:
        return ""
    return show(Figure(t.value, t.low, t.high)) + f" (acc {t.accuracy:.2f})"


def series_name(row: Agreement) -> str:
    """`evaluator / prompt @ judge (annotator)`, the parts that are set."""
    name = row.evaluator + (f" / {row.prompt}" if row.prompt else "")
    name += f" @ {row.judge}" if row.judge else ""
    return name + (f" ({row.annotator})" if row.annotator else "")


def _html(report: CalibrationReport) -> str:
    """A self-contained HTML page: the agreement table, ceilings and disagreements."""
    e = html.escape
    head = "<tr><th>series</th><th>n</th><th>accuracy</th><th>kappa</th><th>spearman</th>"
    head += "<th>pearson</th><th>threshold</th><th>tokens</th></tr>"
    rows = []
    for row in report.agreements:
        threshold = row.threshold
        cut = (
            ""
            if threshold is None
            else f"{threshold.value:.2f} [{threshold.low:.2f}, {threshold.high:.2f}]"
        )
        cells = (
            series_name(row),
            str(row.n),
            show(row.accuracy),
            show(row.kappa),
            show(row.spearman),
            show(row.pearson),
            cut,
            str(row.tokens or ""),
        )
        rows.append("<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in cells) + "</tr>")
    ceilings = [
        f"<li>{e(c.evaluator)}: {e(' vs '.join(c.annotators))}, n={c.n}, "
        f"kappa {e(show(c.kappa))}</li>"
        for c in report.ceilings
    ]
    worst = []
    for row in report.agreements:
        for d in row.disagreements:
            worst.append(
                f"<details><summary>{e(series_name(row))}: human {d.pair.label:g}, judge "
                f"{e(d.judged)} ({d.pair.value:.2f}) — {e(d.pair.query or '')}</summary>"
                f"<p><b>answer</b> {e(d.pair.answer or '–')}</p>"
                f"<p><b>judge</b> {e(d.pair.explanation or '–')}</p>"
                + "".join(f"<pre>{e(c[:_CONTEXT_CHARS])}</pre>" for c in d.pair.contexts)
                + "</details>"
            )
    return (
        "<!doctype html><meta charset='utf-8'><title>groundwire calibrate</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:4px 10px;text-align:left}"
        "pre{white-space:pre-wrap;background:#f4f4f4;padding:6px}</style>"
        f"<h1>Judge vs human: {e(report.labels)}</h1><table>{head}{''.join(rows)}</table>"
        f"<h2>Annotator ceiling</h2><ul>{''.join(ceilings) or '<li>one annotator</li>'}</ul>"
        f"<h2>Unmatched labels: {len(report.unmatched)}</h2>"
        f"<h2>Disagreements, worst first</h2>{''.join(worst)}"
    )


def write_report(report: CalibrationReport, path: str | Path) -> None:
    """Write the report as `.json` or `.html` (by the extension)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in REPORT_SUFFIXES:
        raise ValueError(f"{path}: a report is .json or .html, not {suffix or 'no extension'!r}")
    if suffix == ".json":
        text = json.dumps(report_dict(report), ensure_ascii=False, indent=2, allow_nan=False)
    else:
        text = _html(report)
    path.write_text(text + "\n", encoding="utf-8")
