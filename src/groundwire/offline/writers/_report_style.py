"""The HTML report's look: its style sheet, the colour legend and the score histograms.

One colour language for quotes (`_quote_state.STATES`), drawn from the Okabe-Ito palette that
colour-blind readers can tell apart, and never colour alone: each state also has its own
underline style, a symbol and a text label beside the quote. Everything is inline (no scripts,
fonts or images fetched), so the file opens anywhere, offline.
"""

from __future__ import annotations

import html
from typing import Any, Final

from groundwire.offline.writers._quote_state import STATES

__all__ = ["BINS", "STYLE", "axis_svg", "escape", "histogram_svg", "legend_html", "tag_html"]

BINS: Final = 10
"""Histogram bins over [0, 1]."""

STYLE: Final = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}
.summary td,.summary th,.scores td,.scores th{padding:.2em .8em;text-align:left}
.plots{display:flex;flex-wrap:wrap;gap:1.5em}.plot{border:1px solid #eee;padding:.5em}
.turn{border:1px solid #ddd;border-radius:6px;margin:1.2em 0;padding:.8em 1em}
.ids{color:#777;font-family:monospace;font-size:.85em}
.text{white-space:pre-wrap;background:#fafafa;border:1px solid #eee;padding:.5em}
mark{color:inherit;padding:0 .1em}
mark.ok{background:#cfe5f6;border-bottom:2px solid #0072b2}
mark.near{background:#fbf1b3;border-bottom:2px dashed #8a7300}
mark.changed{background:#f8cdb3;border-bottom:3px double #d55e00}
mark.bad{background:#efd3e4;border-bottom:2px dotted #8e3b6b}
mark.closest{background:none;outline:1px dashed #888}
.tag{font-size:.75em;font-weight:600;margin-left:.25em;padding:0 .3em;border-radius:3px;
white-space:nowrap}
.tag.ok{color:#005a8c}.tag.near{color:#6b5900}.tag.changed{color:#a34700}.tag.bad{color:#7a2f5b}
.tag.closest{color:#555;font-weight:400}
.legend{border:1px solid #ddd;border-radius:6px;padding:.5em 1em}.legend li{margin:.2em 0}
.skipped{background:#f4f4f4;border-left:4px solid #888;padding:.4em .8em}
.na{color:#777}.err{color:#a34700}
.diff{font-family:ui-monospace,monospace;font-size:.9em;margin:.3em 0 .8em}
.diff del{background:#f8cdb3;color:#5c2800}.diff ins{background:#cfe5f6;text-decoration:none}
.diff del[title="elided"]{background:#eee;color:#777}
.diff .meaning{outline:2px solid #d55e00}.why{color:#a34700;font-weight:600}
"""


def escape(text: Any) -> str:
    """HTML-escaped text (None as empty)."""
    return html.escape("" if text is None else str(text))


def tag_html(css: str, text: str) -> str:
    """The text label shown beside a marked quote."""
    return f'<span class="tag {css}">{escape(text)}</span>'


def legend_html() -> str:
    """The colour legend: every quote state with its look, symbol, label and meaning."""
    items = [
        f'<li data-state="{name}"><mark class="{style.css}">quoted words</mark>'
        f"{tag_html(style.css, f'{style.symbol} {style.label}')}: {escape(style.meaning)}</li>"
        for name, style in STATES.items()
    ]
    items.append(
        '<li data-state="closest"><mark class="closest">passage</mark>'
        f"{tag_html('closest', 'closest passage')}: where a quote that was not found comes "
        "nearest; shown for reference, not a finding</li>"
    )
    return (
        '<aside class="legend" id="legend"><strong>How quotes are marked</strong> (one state '
        "per quote, whichever evaluators ran; hover a quote for each evaluator's finding)"
        f"<ul>{''.join(items)}</ul></aside>"
    )


def histogram_svg(name: str, bins: list[int]) -> str:
    """An inline SVG histogram of one evaluator's scores over [0, 1]."""
    width, height, pad = 300, 130, 22
    top = max(bins) or 1
    bar = (width - 2 * pad) / BINS
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(name)} score distribution">'
    ]
    for index, count in enumerate(bins):
        h = (height - 2 * pad) * count / top
        x = pad + index * bar
        y = height - pad - h
        low, high = index / BINS, (index + 1) / BINS
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{h:.1f}" '
            f'fill="#0072b2"><title>{low:.1f}-{high:.1f}: {count}</title></rect>'
        )
        if count:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{y - 3:.1f}" font-size="9" '
                f'text-anchor="middle">{count}</text>'
            )
    return "".join(parts) + axis_svg(width, height, pad)


def axis_svg(width: float, height: float, pad: float) -> str:
    """The score axis (0, 0.5, 1) under a histogram, and the end of its `<svg>`: one drawing
    for the report's histograms and the baseline comparison's paired ones."""
    base = height - pad
    parts = [f'<line x1="{pad}" y1="{base}" x2="{width - pad}" y2="{base}" stroke="#444"/>']
    for value in (0.0, 0.5, 1.0):
        x = pad + value * (width - 2 * pad)
        parts.append(
            f'<text x="{x:.1f}" y="{base + 14}" font-size="10" text-anchor="middle">'
            f"{value:g}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
