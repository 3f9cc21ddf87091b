"""Finding one quote in the corpus: exact hit first, then BM25 windows + trimming, or ellipsis."""

from __future__ import annotations

import numpy as np

from groundwire.evaluators.quote_verification._bm25 import WindowIndex, tokenize
from groundwire.evaluators.quote_verification._corpus import Corpus, find_whole
from groundwire.evaluators.quote_verification._ellipsis import (
    GapFunction,
    Located,
    best_pair,
    split_ellipsis,
    weighted_ratio,
)
from groundwire.evaluators.quote_verification._options import Options
from groundwire.evaluators.quote_verification._trim import Alignment, trim, window_ratio
from groundwire.evaluators.quote_verification._windows import Window

__all__ = ["Locator"]

BM25_EPS = 1e-9
"""The eps of bm25_ratio = top1 / (top2 + eps)."""
_TOP_WINDOWS = 3
"""Best BM25 windows whose trimmed spans compete (the card keeps only the first)."""
_MAX_OCCURRENCES = 16
"""Exact occurrences of an ellipsis part considered when pairing head and tail."""
_EDGE = 1
"""A trimmed span within this many characters of a window edge is treated as truncated."""
_GOOD_ENOUGH = 0.999


def _inside(located: Located, window: Window) -> bool:
    """True when the located span lies within the window."""
    return located.doc == window.doc and window.start <= located.start and located.end <= window.end


class Locator:
    """Locates normalised quotes in one corpus with one set of options."""

    def __init__(self, corpus: Corpus, options: Options, window_size: int, overlap: int) -> None:
        """Bind the corpus and settings; the BM25 index is built on the first non-exact quote."""
        self._corpus = corpus
        self._options = options
        self._size = window_size
        self._overlap = overlap
        self._gap = GapFunction(corpus.norms)

    def _index(self) -> tuple[list[Window], WindowIndex]:
        """The corpus' windows and BM25 index for this call's settings."""
        o = self._options
        return self._corpus.index(self._size, self._overlap, o.bm25_k1, o.bm25_b)

    def locate(self, quote: str, original: str | None = None) -> Located | None:
        """Where the normalised quote is, or None when no document shares a word with it.

        Of several exact hits, one where the document has the `original` quote verbatim wins."""
        found = self.candidates(quote, original)
        return found[0] if found else None

    def candidates(self, quote: str, original: str | None = None) -> list[Located]:
        """Where the normalised quote may be, best first: one span for an exact hit or an
        ellipsis quote, else the trimmed spans of the best BM25 windows."""
        located = self._locate(quote, original)
        if isinstance(located, list):
            return located
        return [] if located is None else [located]

    def _locate(self, quote: str, original: str | None) -> Located | list[Located] | None:
        """`candidates`, with one span where there is only one."""
        hit = self._corpus.find_exact(quote)
        if hit:
            if original is not None:
                verbatim = self._corpus.find_verbatim(original.strip(), hit[0])
                if verbatim is not None:
                    return Located(*verbatim, 1.0, None, None, "exact")
            return Located(*hit[0], 1.0, None, None, "exact")
        parts = split_ellipsis(quote)
        # a side that faces an ellipsis may stop inside a word ("gam...ma")
        open_start = bool(parts) and not quote.startswith(parts[0])
        open_end = bool(parts) and not quote.endswith(parts[-1])
        if len(parts) >= 2:
            return self._locate_ellipsis(parts[0], parts[-1], open_start, open_end)
        if parts and parts[0] != quote:
            hit = self._corpus.find_exact(parts[0], open_start=open_start, open_end=open_end)
            if hit:
                return Located(*hit[0], 1.0, None, None, "exact")
            quote = parts[0]
        return self._candidates(quote)

    def _candidates(self, quote: str) -> list[Located]:
        """Spans from the best BM25 windows, best match first."""
        windows, index = self._index()
        tokens = tokenize(quote)
        if not windows or not index.matches_any(tokens):
            return []
        scores = index.scores(tokens)
        count = min(_TOP_WINDOWS, len(scores))
        top = np.argpartition(-scores, count - 1)[:count]
        ranked = sorted((int(i) for i in top), key=lambda i: (-scores[i], i))
        top1 = float(scores[ranked[0]])
        top2 = float(scores[ranked[1]]) if len(ranked) > 1 else 0.0
        ratio = top1 / (top2 + BM25_EPS)
        found: list[Located] = []
        for window in ranked:
            if any(_inside(located, windows[window]) for located in found):
                continue  # a span already found lies in this window: trimming it finds that span
            span = self._align(quote, windows, window)
            found.append(
                Located(
                    windows[window].doc,
                    span.start,
                    span.end,
                    span.ratio,
                    float(scores[window]),
                    ratio,
                    "fuzzy",
                )
            )
            if span.ratio >= _GOOD_ENOUGH:
                break
        found.sort(key=lambda located: -located.ratio)
        return found

    def _align(self, quote: str, windows: list[Window], at: int) -> Alignment:
        """Trim window `at` to the quote; when the span touches an edge, widen by neighbours."""
        o = self._options
        window = windows[at]
        text = self._corpus.norms[window.doc].text
        lo, hi = window.start, window.end
        if not o.trim_spans:
            return Alignment(lo, hi, window_ratio(quote, text[lo:hi]))
        _, index = self._index()
        best = trim(o.trim_method, quote, text[lo:hi], index.idf, o.bm25_k1).shifted(lo)
        first = last = at
        for _ in range(o.expand_window_neighbors):
            left = best.start - lo <= _EDGE and first > 0 and windows[first - 1].doc == window.doc
            right = (
                hi - best.end <= _EDGE
                and last + 1 < len(windows)
                and windows[last + 1].doc == window.doc
            )
            if not (left or right):
                break
            if left:
                first -= 1
                lo = windows[first].start
            if right:
                last += 1
                hi = windows[last].end
            wider = trim(o.trim_method, quote, text[lo:hi], index.idf, o.bm25_k1).shifted(lo)
            if wider.ratio < best.ratio:
                break
            best = wider
        return best

    def _part_candidates(self, part: str, open_start: bool, open_end: bool) -> list[Located]:
        """Exact occurrences of an ellipsis part, else its best trimmed BM25 spans."""
        hits = self._corpus.find_exact(
            part, limit=_MAX_OCCURRENCES, open_start=open_start, open_end=open_end
        )
        if hits:
            return [Located(*hit, 1.0, None, None, "exact") for hit in hits]
        return self._candidates(part)

    def _tails_after(self, heads: list[Located], tail: str, open_end: bool) -> list[Located]:
        """Tail spans searched right after each head (for tails BM25 alone does not rank high)."""
        found: list[Located] = []
        limit = self._options.ellipsis_max_gap
        for head in heads[:_TOP_WINDOWS]:
            text = self._corpus.norms[head.doc].text
            position = find_whole(text, tail, head.end, open_start=True, open_end=open_end)
            if position >= 0:
                found.append(
                    Located(head.doc, position, position + len(tail), 1.0, None, None, "exact")
                )
                continue
            reach = (limit if limit is not None else 2 * self._size) + 2 * len(tail)
            region = text[head.end : head.end + reach]
            if not region.strip():
                continue
            _, index = self._index()
            o = self._options
            span = trim(o.trim_method, tail, region, index.idf, o.bm25_k1).shifted(head.end)
            found.append(Located(head.doc, span.start, span.end, span.ratio, None, None, "fuzzy"))
        return found

    def _locate_ellipsis(
        self, head: str, tail: str, open_start: bool, open_end: bool
    ) -> Located | None:
        """Head and tail located separately; the span runs from head start to tail end."""
        max_gap = self._options.ellipsis_max_gap
        heads = self._part_candidates(head, open_start, True)
        tails = self._part_candidates(tail, True, open_end)
        pair = best_pair(head, tail, heads, tails, self._gap, max_gap)
        if heads and (pair is None or pair[1].ratio < _GOOD_ENOUGH):
            # the tail may be too common for BM25 to rank its window: look right after each head
            tails = tails + self._tails_after(heads, tail, open_end)
            pair = best_pair(head, tail, heads, tails, self._gap, max_gap)
        if pair is not None:
            first, second = pair
            ratio = weighted_ratio(head, first.ratio, tail, second.ratio)
            score = first.bm25_score if first.bm25_score is not None else second.bm25_score
            bm25_ratio = first.bm25_ratio if first.bm25_ratio is not None else second.bm25_ratio
            return Located(first.doc, first.start, second.end, ratio, score, bm25_ratio, "ellipsis")
        # No valid pair: keep the better part alone; the missing part counts as a zero match.
        total = len(head) + len(tail)
        singles = [(c, c.ratio * len(head) / total) for c in heads]
        singles += [(c, c.ratio * len(tail) / total) for c in tails]
        if not singles:
            return None
        best, ratio = max(singles, key=lambda item: item[1])
        return Located(
            best.doc, best.start, best.end, ratio, best.bm25_score, best.bm25_ratio, "ellipsis"
        )
