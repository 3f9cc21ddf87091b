"""A turn's quotes for the HTML report: one state each, where they are marked, and their diffs.

`turn_quotes` pairs the rows quoted_spans (`details["spans"]`) and quote_verification
(`details["quotes"]`) wrote for the same quote of the answer (same answer offsets, else same
text) and gives each quote its one state (`quote_state`). A skipped or failed evaluator wrote no
rows, so the state comes from the other. `answer_html` and `context_html` mark the quotes in the
answer (with a text label) and where they were found in the contexts; a low-confidence closest
window is marked as a neutral "closest passage". `diffs_html` shows, for each located quote that
differs from its source, the source words struck and the quote's words marked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from groundwire._types import RagTurn
from groundwire.offline._results import TurnResult
from groundwire.offline.writers._quote_state import QuoteState, quote_state
from groundwire.offline.writers._report_style import escape, tag_html

__all__ = [
    "QuoteView",
    "answer_html",
    "context_html",
    "context_marks",
    "diffs_html",
    "document_names",
    "turn_quotes",
]

_Mark = tuple[int, int, str, str, str]
"""(start, end, css class, title, quote state or "") of one marked stretch of text."""


@dataclass(frozen=True, slots=True)
class QuoteView:
    """One quote of the answer: where it is, its state, and where it was found (if anywhere)."""

    start: int | None
    end: int | None
    text: str
    state: QuoteState
    context: int | None = None
    """Index of the context it was located in (or, when not found, the closest window's)."""
    context_start: int | None = None
    context_end: int | None = None
    verify_row: Mapping[str, Any] | None = None


def _int(value: Any) -> int | None:
    """The value when it is an int (bools excluded), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def document_names(turn: RagTurn) -> list[str]:
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


def _rows(result: TurnResult, key: str) -> list[Mapping[str, Any]]:
    """Every evaluator's rows under `details[key]` (the first evaluator's row per quote)."""
    rows: list[Mapping[str, Any]] = []
    for score in result.scores.values():
        rows.extend(row for row in score.details.get(key) or () if isinstance(row, Mapping))
    return rows


def _where(
    turn: RagTurn,
    names: dict[str, int],
    spans_row: Mapping[str, Any] | None,
    verify_row: Mapping[str, Any] | None,
) -> tuple[int | None, int | None, int | None]:
    """(context index, start, end) of the quote's located passage, or Nones."""
    if verify_row is not None:
        index = names.get(str(verify_row.get("source_doc")))
        start, end = _int(verify_row.get("doc_start")), _int(verify_row.get("doc_end"))
        if index is not None and start is not None and end is not None:
            return index, start, end
    if spans_row is not None and spans_row.get("matched"):
        index, quote = _int(spans_row.get("context_index")), spans_row.get("text")
        if index is not None and 0 <= index < len(turn.contexts) and isinstance(quote, str):
            found = turn.contexts[index].text.casefold().find(quote.casefold())
            if found >= 0:
                return index, found, found + len(quote)
    return None, None, None


def turn_quotes(result: TurnResult) -> list[QuoteView]:
    """The answer's quotes, each with its one state, in answer order."""
    spans: dict[Any, Mapping[str, Any]] = {}
    verifies: dict[Any, Mapping[str, Any]] = {}
    texts: dict[Any, str] = {}
    for key_of, rows, into in (
        (("start", "end", "text"), _rows(result, "spans"), spans),
        (("answer_start", "answer_end", "quote"), _rows(result, "quotes"), verifies),
    ):
        for row in rows:
            start, end = _int(row.get(key_of[0])), _int(row.get(key_of[1]))
            text = str(row.get(key_of[2]) or "")
            key: Any = (start, end) if start is not None and end is not None else text.casefold()
            into.setdefault(key, row)
            texts.setdefault(key, text)
    names = {name: index for index, name in enumerate(document_names(result.turn))}
    views = []
    for key in sorted(texts, key=lambda k: k if isinstance(k, tuple) else (1 << 62, 0)):
        spans_row, verify_row = spans.get(key), verifies.get(key)
        state = quote_state(spans_row, verify_row)
        if state is None:
            continue
        where = _where(result.turn, names, spans_row, verify_row)
        start, end = key if isinstance(key, tuple) else (None, None)
        views.append(QuoteView(start, end, texts[key], state, *where, verify_row=verify_row))
    return views


def _highlight(text: str, marks: list[_Mark], tags: dict[int, str] | None = None) -> str:
    """`text` escaped, with non-overlapping marks; `tags[start]` follows the mark at `start`."""
    out: list[str] = []
    position = 0
    for start, end, css, title, state in sorted(marks):
        if start < position or end <= start or end > len(text):
            continue
        out.append(escape(text[position:start]))
        data = f' data-state="{state}"' if state else ""
        out.append(f'<mark class="{css}"{data} title="{escape(title)}">')
        out.append(f"{escape(text[start:end])}</mark>{(tags or {}).get(start, '')}")
        position = end
    out.append(escape(text[position:]))
    return "".join(out)


def answer_html(answer: str, quotes: list[QuoteView]) -> str:
    """The answer with each quote marked in its state's colour and labelled in words."""
    marks: list[_Mark] = []
    tags: dict[int, str] = {}
    for quote in quotes:
        if quote.start is None or quote.end is None:
            continue
        style = quote.state.style
        title = "; ".join(quote.state.evidence)
        marks.append((quote.start, quote.end, style.css, title, quote.state.state))
        tags[quote.start] = tag_html(style.css, f"{style.symbol} {quote.state.label}")
    return _highlight(answer, marks, tags)


def context_marks(quotes: list[QuoteView], index: int) -> list[_Mark]:
    """Marks for context `index`: each located quote in its state, a closest window neutral."""
    marks: dict[tuple[int, int], _Mark] = {}
    for quote in quotes:
        if quote.context != index or quote.context_start is None or quote.context_end is None:
            continue
        span = (quote.context_start, quote.context_end)
        if quote.state.closest:
            mark: _Mark = (*span, "closest", "closest passage (not a finding)", "")
        else:
            mark = (*span, quote.state.style.css, quote.state.label, "")
        if span not in marks or marks[span][2] == "closest":
            marks[span] = mark
    return sorted(marks.values())


def context_html(text: str, marks: list[_Mark]) -> str:
    """A context's text with its marks; a closest passage carries its neutral label."""
    neutral = tag_html("closest", "closest passage")
    tags = {mark[0]: neutral for mark in marks if mark[2] == "closest"}
    return _highlight(text, marks, tags)


def _diff_html(row: Mapping[str, Any], text: str) -> str:
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
    out: list[str] = []
    position = min(start, placed[0][0])
    for lo, hi, edit in placed:
        if lo < position:
            continue
        out.append(escape(text[position:lo]))
        kinds = [k for a, b, k in changed if a is not None and b is not None and a <= lo <= b]
        css = ' class="meaning"' if kinds else ""
        label = f"{edit.get('kind')}" + (f": {', '.join(kinds)} changed" if kinds else "")
        if hi > lo:
            out.append(f'<del title="{escape(label)}"{css}>{escape(text[lo:hi])}</del>')
        quoted = str(edit.get("quote_text") or "")
        if quoted:
            out.append(f'<ins title="{escape(label)}"{css}>{escape(quoted)}</ins>')
        position = hi
    out.append(escape(text[position : max(end, position)]))
    why = row.get("low_confidence_reason") if row.get("meaning_changes") else None
    reason = f' <span class="why">{escape(why)}</span>' if why else ""
    return f'<div class="diff">{"".join(out)}{reason}</div>'


def diffs_html(turn: RagTurn, quotes: list[QuoteView]) -> list[str]:
    """One diff per quote located with word edits (a closest window is no source: no diff)."""
    diffs: list[str] = []
    for quote in quotes:
        row = quote.verify_row
        if row is None or quote.context is None or quote.state.closest or not row.get("edits"):
            continue
        diff = _diff_html(row, turn.contexts[quote.context].text)
        if diff:
            label = tag_html(quote.state.style.css, quote.state.label)
            diffs.append(f"<p>“{escape(quote.text)}” {label}</p>{diff}")
    return diffs
