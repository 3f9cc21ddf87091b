"""Find quoted spans in text, in the Ragas 0.4.3 way or the typographic way.

`find_quotes` is the one quote finder of groundwire: `quoted_spans`, `quote_verification` and
`citation_support` all extract quotes through it, so they agree on what counts as a quote.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple, get_args

__all__ = ["Quote", "QuoteStyle", "find_quotes", "word_count"]

QuoteStyle = Literal["ragas", "typographic"]
"""How quotes are recognised: Ragas 0.4.3's released pattern, or typographic pairs."""

QUOTE_STYLES: tuple[str, ...] = get_args(QuoteStyle)


class Quote(NamedTuple):
    """A quoted span: inner text (stripped) and its offsets; `text[start:end] == quote.text`."""

    text: str
    start: int
    end: int


# --- Ragas style ---------------------------------------------------------------------------------
# Ragas 0.4.3 builds its pattern from adjacent string literals, so its character class is only
# the straight double quote, the straight single quote, the backtick and the acute accent (U+00B4),
# any of which opens and any of which closes; the lazy `.` does not cross a newline.
_RAGAS_MARKS = "\"'`\u00b4"
_RAGAS_PATTERN = re.compile(f"[{_RAGAS_MARKS}](.*?)[{_RAGAS_MARKS}]")

# --- Typographic style ---------------------------------------------------------------------------
# opener -> the marks that close it. Symmetric and German-style marks appear on both sides.
_CLOSERS: dict[str, str] = {
    '"': '"',
    "\u201c": "\u201d",  # “ … ”
    "\u201e": "\u201c\u201d",  # „ … “ (German) and „ … ” (Polish)
    "\u2018": "\u2019",  # ‘ … ’
    "\u00ab": "\u00bb",  # « … »
    "\u00bb": "\u00ab",  # » … « (German)
    "\u2039": "\u203a",  # ‹ … ›
    "\u203a": "\u2039",  # › … ‹ (German)
    "\u300c": "\u300d",  # 「 … 」
    "\u300e": "\u300f",  # 『 … 』
}
_MARK = re.compile("[" + re.escape("".join(sorted(set(_CLOSERS).union(*_CLOSERS.values())))) + "]")
# Marks that also occur outside quotations (inch marks, breadcrumbs, elisions): they open only
# when a non-space character follows.
_FLANKED_OPENERS = frozenset('"\u2018\u00bb\u203a')
# Marks that are apostrophes when a letter or digit stands on both sides (it’s, O’Neil).
_APOSTROPHE_LIKE = frozenset("\u2018\u2019")
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TYPOGRAPHIC_WORD = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")


def find_quotes(text: str, *, style: QuoteStyle = "typographic", min_len: int = 1) -> list[Quote]:
    """Return the quoted spans of `text` with at least `min_len` words, in order of position.

    `style="ragas"` reproduces Ragas 0.4.3's extraction exactly (see docs/quoted_spans.md);
    `style="typographic"` pairs real quotation marks, skips apostrophes and keeps only the
    outermost quote of a nested pair.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    check_min_len(min_len)
    if style == "ragas":
        return [q for q in _ragas_quotes(text) if len(q.text.split()) >= min_len]
    if style == "typographic":
        return [q for q in _typographic_quotes(text) if word_count(q.text) >= min_len]
    raise ValueError(f"style must be one of {list(QUOTE_STYLES)}, got {style!r}")


def check_min_len(min_len: object, where: str = "min_len") -> int:
    """Validate a minimum word count: a non-negative int (not a bool)."""
    if isinstance(min_len, bool) or not isinstance(min_len, int):
        raise TypeError(f"{where} must be an int, got {type(min_len).__name__}")
    if min_len < 0:
        raise ValueError(f"{where} must be >= 0, got {min_len}")
    return min_len


def word_count(span: str) -> int:
    """Words in a span for the typographic style: whitespace-separated, each CJK character one."""
    return len(_TYPOGRAPHIC_WORD.findall(span))


def _stripped(text: str, start: int, end: int) -> Quote:
    """The quote text[start:end] with surrounding whitespace removed, offsets adjusted."""
    inner = text[start:end]
    core = inner.strip()
    if not core:
        return Quote("", start, start)
    offset = start + len(inner) - len(inner.lstrip())
    return Quote(core, offset, offset + len(core))


def _ragas_quotes(text: str) -> list[Quote]:
    """Every span Ragas 0.4.3's pattern finds, before the word-count filter."""
    return [_stripped(text, m.start(1), m.end(1)) for m in _RAGAS_PATTERN.finditer(text)]


def _typographic_quotes(text: str) -> list[Quote]:
    """The outermost balanced quotes, paragraph by paragraph, before the word-count filter."""
    pairs: list[tuple[int, int]] = []
    start = 0
    for paragraph_break in _PARAGRAPH_BREAK.finditer(text):
        pairs.extend(_pairs_in(text, start, paragraph_break.start()))
        start = paragraph_break.end()
    pairs.extend(_pairs_in(text, start, len(text)))
    quotes: list[Quote] = []
    outer_end = -1
    for open_at, close_at in sorted(pairs):
        if open_at < outer_end:
            continue  # nested inside the previous outermost quote
        outer_end = close_at
        quotes.append(_stripped(text, open_at + 1, close_at))
    return quotes


def _pairs_in(text: str, begin: int, end: int) -> list[tuple[int, int]]:
    """Match quotation marks in text[begin:end] with a stack; unclosed openers are dropped."""
    pairs: list[tuple[int, int]] = []
    stack: list[tuple[str, int]] = []
    for found in _MARK.finditer(text, begin, end):
        i, mark = found.start(), found.group()
        if mark in _APOSTROPHE_LIKE and _inside_word(text, i, begin, end):
            continue
        depth = _open_depth(stack, mark)
        if depth is not None:
            pairs.append((stack[depth][1], i))
            del stack[depth:]  # openers left unclosed inside this pair are dropped
        elif mark in _CLOSERS and (
            mark not in _FLANKED_OPENERS or (i + 1 < end and not text[i + 1].isspace())
        ):
            stack.append((mark, i))
    return pairs


def _open_depth(stack: list[tuple[str, int]], mark: str) -> int | None:
    """Index of the innermost open quote that `mark` closes, or None."""
    for depth in range(len(stack) - 1, -1, -1):
        if mark in _CLOSERS[stack[depth][0]]:
            return depth
    return None


def _inside_word(text: str, i: int, begin: int, end: int) -> bool:
    """True when text[i] has a letter or digit on both sides (an apostrophe, as in it’s)."""
    return begin < i < end - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
