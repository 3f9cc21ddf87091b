"""BM25 over the windows: rank-bm25's BM25Okapi statistics, scored through an inverted index.

`BM25Okapi.get_scores` loops over every window in Python for each query token; the index here
computes the same sums (same idf, k1, b, length normalisation) from postings, touching only the
windows that contain a token. Built once per document set and reused for every quote.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence
from itertools import accumulate, chain

import numpy as np
from numpy.typing import NDArray
from rank_bm25 import BM25Okapi

__all__ = ["DocumentTokens", "WindowIndex", "tokenize"]

_TOKEN = re.compile(r"\w+")
_SEPARATORS = re.compile(r"(\W+)")


def tokenize(text: str) -> list[str]:
    """Lower-cased `\\w+` word tokens (no stemming, no stop words: no NLTK data download)."""
    return _TOKEN.findall(text.lower())


class DocumentTokens:
    """A document's `\\w+` tokens with their offsets, so that any window's tokens come from one
    pass over the document: `window(start, end)` equals `tokenize(text[start:end])` (a word cut
    by the window edge contributes its part inside)."""

    def __init__(self, text: str) -> None:
        """Tokenise the whole document once."""
        # split() keeps the separators, so word runs sit at the even indices and the running sum
        # of part lengths gives every offset, all without a Python loop per token
        parts = _SEPARATORS.split(text)
        bounds = list(accumulate(map(len, parts), initial=0))
        words, starts, ends = parts[0::2], bounds[0::2], bounds[1::2]
        lo, hi = (1 if not words[0] else 0), (len(words) - 1 if not words[-1] else len(words))
        self._text = text
        self._starts = starts[lo:hi]
        self._ends = ends[lo:hi]
        self._tokens = list(map(str.lower, words[lo:hi]))

    def window(self, start: int, end: int) -> list[str]:
        """The tokens of text[start:end]."""
        if end <= start:  # an empty window inside a word would otherwise give one empty token
            return []
        first = bisect.bisect_right(self._ends, start)
        last = bisect.bisect_left(self._starts, end)
        tokens = self._tokens[first:last]
        if not tokens:
            return tokens
        if self._starts[first] < start or self._ends[last - 1] > end:
            lo = max(start, self._starts[first])
            if last - 1 == first:
                tokens[0] = self._text[lo : min(end, self._ends[first])].lower()
            else:
                tokens[0] = self._text[lo : self._ends[first]].lower()
                tokens[-1] = self._text[
                    self._starts[last - 1] : min(end, self._ends[last - 1])
                ].lower()
        return tokens


class _FastOkapi(BM25Okapi):  # type: ignore[misc]  # rank-bm25 ships no type hints
    """rank-bm25's BM25Okapi, with its corpus statistics counted by `collections.Counter` (C)
    instead of a per-token Python loop; idf, k1, b and scores are BM25Okapi's own."""

    def _initialize(self, corpus: Sequence[Sequence[str]]) -> Counter[str]:
        """Count per-window term frequencies and document frequencies as rank-bm25 does."""
        document_frequency: Counter[str] = Counter()
        total = 0
        for document in corpus:
            self.doc_len.append(len(document))
            total += len(document)
            frequencies = Counter(document)
            self.doc_freqs.append(frequencies)
            document_frequency.update(frequencies.keys())
            self.corpus_size += 1
        self.avgdl = total / self.corpus_size
        return document_frequency


class WindowIndex:
    """BM25 scores of a query against every window, plus the per-term statistics trimming needs.

    The postings are laid out once, grouped by term: `_windows[_bounds[t]:_bounds[t + 1]]` are
    the windows holding term t and `_weights[...]` its BM25 contribution to each of them.
    """

    def __init__(self, windows_tokens: Sequence[Sequence[str]], *, k1: float, b: float) -> None:
        """Index the tokenised windows; windows without a token are allowed (they score 0)."""
        self.size = len(windows_tokens)
        self.k1 = k1
        self.b = b
        self._okapi: _FastOkapi | None = None
        self._vocab: dict[str, int] = {}
        self._bounds: NDArray[np.intp] = np.zeros(1, dtype=np.intp)
        self._windows: NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        self._weights: NDArray[np.float64] = np.zeros(0, dtype=np.float64)
        if not any(windows_tokens):
            return
        okapi = _FastOkapi(windows_tokens, k1=k1, b=b)
        self._okapi = okapi
        freqs: list[Counter[str]] = okapi.doc_freqs
        terms = list(chain.from_iterable(freqs))
        pairs = len(terms)
        tfs = np.fromiter(chain.from_iterable(f.values() for f in freqs), np.float64, pairs)
        per_window = np.fromiter((len(f) for f in freqs), np.intp, len(freqs))
        windows = np.repeat(np.arange(len(freqs), dtype=np.intp), per_window)
        self._vocab = {term: i for i, term in enumerate(okapi.idf)}
        term_ids = np.fromiter(map(self._vocab.__getitem__, terms), np.intp, pairs)
        order = np.argsort(term_ids, kind="stable")
        term_ids, windows, tfs = term_ids[order], windows[order], tfs[order]
        idf = np.fromiter(okapi.idf.values(), np.float64, len(self._vocab))
        lengths = np.asarray(okapi.doc_len, dtype=np.float64)
        norm = k1 * (1.0 - b + b * lengths / okapi.avgdl)
        self._bounds = np.searchsorted(term_ids, np.arange(len(self._vocab) + 1))
        self._windows = windows
        self._weights = idf[term_ids] * (tfs * (k1 + 1.0) / (tfs + norm[windows]))

    def idf(self, term: str) -> float:
        """rank-bm25's idf of a term (0.0 for a term no window contains)."""
        if self._okapi is None:
            return 0.0
        return float(self._okapi.idf.get(term) or 0.0)

    def matches_any(self, tokens: Sequence[str]) -> bool:
        """True when at least one window contains at least one of the tokens."""
        return any(token in self._vocab for token in tokens)

    def scores(self, tokens: Sequence[str]) -> NDArray[np.float64]:
        """BM25 score of the query tokens against each window (what `get_scores` returns)."""
        scores = np.zeros(self.size, dtype=np.float64)
        for token in tokens:
            term = self._vocab.get(token)
            if term is not None:
                lo, hi = self._bounds[term], self._bounds[term + 1]
                scores[self._windows[lo:hi]] += self._weights[lo:hi]
        return scores
