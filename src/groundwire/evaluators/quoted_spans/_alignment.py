"""`quoted_spans_alignment`: the batch score, a drop-in for Ragas 0.4.3's function of that name.

    score = matched / total    over every qualifying quoted span of every answer (0.0 if none)

Inputs are checked before anything is scored, so a malformed row fails with its index instead of
producing a silently wrong number (see docs/quoted_spans.md, "Where we differ on bad input").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Sized
from typing import Any

from groundwire.evaluators.quoted_spans._finder import QUOTE_STYLES, QuoteStyle, check_min_len
from groundwire.evaluators.quoted_spans._matching import match_spans

__all__ = ["SCORE_KEY", "quoted_spans_alignment"]

SCORE_KEY = "citation_alignment_quoted_spans"
"""The score's key in the returned dict (Ragas' name)."""


def quoted_spans_alignment(
    answers: Sequence[str],
    sources: Sequence[Sequence[str]],
    *,
    casefold: bool = True,
    min_len: int = 3,
    quote_style: QuoteStyle = "ragas",
    normalize_unicode: bool = False,
) -> dict[str, float]:
    """Share of quoted spans (of at least `min_len` words) found verbatim in each answer's sources.

    `answers` is a sequence of N strings and `sources` a sequence of N sequences of strings.
    Returns `{"citation_alignment_quoted_spans": matched/total, "matched": m, "total": t}` (floats;
    score 0.0 when no span is found). `quote_style="ragas"` gives Ragas 0.4.3's numbers exactly;
    `"typographic"` recognises real quotation marks and never matches across two sources.
    `normalize_unicode=True` compares Unicode NFC forms in Ragas style too (a quote typed in
    decomposed form then matches a composed source); off by default, for parity with Ragas.
    """
    check_min_len(min_len)
    if quote_style not in QUOTE_STYLES:
        raise ValueError(f"quote_style must be one of {list(QUOTE_STYLES)}, got {quote_style!r}")
    if not isinstance(normalize_unicode, bool):
        raise TypeError(f"normalize_unicode must be a bool, got {type(normalize_unicode).__name__}")
    answer_list = _strings(answers, "answers")
    source_lists = _rows(sources, "sources")
    if len(answer_list) != len(source_lists):
        raise ValueError(
            "answers and sources must have the same length: got "
            f"{len(answer_list)} answers and {len(source_lists)} source lists"
        )
    matched = total = 0
    for answer, passages in zip(answer_list, source_lists, strict=True):
        spans = match_spans(
            answer,
            passages,
            casefold=bool(casefold),
            min_len=min_len,
            style=quote_style,
            normalize_unicode=normalize_unicode,
        )
        total += len(spans)
        matched += sum(span.matched for span in spans)
    return {
        SCORE_KEY: matched / total if total else 0.0,
        "matched": float(matched),
        "total": float(total),
    }


def _sequence(value: object, where: str) -> list[Any]:
    """A sized, iterable, non-string container as a list (lists, tuples, arrays, Series)."""
    if isinstance(value, str | bytes) or not (
        isinstance(value, Sized) and isinstance(value, Iterable)
    ):
        hint = " (wrap a single string in a list)" if isinstance(value, str | bytes) else ""
        kind = type(value).__name__
        raise TypeError(f"{where} must be a sequence such as a list, got {kind}{hint}")
    return list(value)


def _strings(value: object, where: str) -> list[str]:
    """A sequence whose every item is a str; the error names the first bad item's index."""
    items = _sequence(value, where)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{where}[{i}] must be a str, got {type(item).__name__}")
    return items


def _rows(value: object, where: str) -> list[list[str]]:
    """A sequence of sequences of str (one source list per answer)."""
    return [_strings(row, f"{where}[{i}]") for i, row in enumerate(_sequence(value, where))]
