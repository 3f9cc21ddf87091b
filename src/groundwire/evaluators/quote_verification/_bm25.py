"""BM25 over the windows: rank-bm25's BM25Okapi statistics, scored through an inverted index.

`BM25Okapi.get_scores` loops over every window in Python for each query token; the index here
computes the same sums (same idf, k1, b, length normalisation) from postings, touching only the
windows that contain a token. Built once per document set and reused for every quote.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray
from rank_bm25 import BM25Okapi

__all__ = ["WindowIndex", "tokenize"]

_TOKEN = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    """Lower-cased `\\w+` word tokens (no stemming, no stop words: no NLTK data download)."""
    return _TOKEN.findall(text.lower())


class WindowIndex:
    """BM25 scores of a query against every window, plus the per-term statistics trimming needs."""

    def __init__(self, windows_tokens: Sequence[Sequence[str]], *, k1: float, b: float) -> None:
        """Index the tokenised windows; windows without a token are allowed (they score 0)."""
        self.size = len(windows_tokens)
        self.k1 = k1
        self.b = b
        self._okapi: BM25Okapi | None = None
        self._postings: dict[str, tuple[list[int], list[int]]] = {}
        self._cache: dict[str, tuple[NDArray[np.intp], NDArray[np.float64]]] = {}
        if not any(windows_tokens):
            return
        okapi = BM25Okapi([list(tokens) for tokens in windows_tokens], k1=k1, b=b)
        self._okapi = okapi
        self._lengths = np.asarray(okapi.doc_len, dtype=np.float64)
        self._norm = k1 * (1.0 - b + b * self._lengths / okapi.avgdl)
        for window, freqs in enumerate(okapi.doc_freqs):
            for term, freq in freqs.items():
                ids, tfs = self._postings.setdefault(term, ([], []))
                ids.append(window)
                tfs.append(freq)

    def idf(self, term: str) -> float:
        """rank-bm25's idf of a term (0.0 for a term no window contains)."""
        if self._okapi is None:
            return 0.0
        return float(self._okapi.idf.get(term) or 0.0)

    def _term(self, term: str) -> tuple[NDArray[np.intp], NDArray[np.float64]]:
        cached = self._cache.get(term)
        if cached is None:
            ids_list, tfs_list = self._postings[term]
            ids = np.asarray(ids_list, dtype=np.intp)
            tfs = np.asarray(tfs_list, dtype=np.float64)
            weights = self.idf(term) * (tfs * (self.k1 + 1.0) / (tfs + self._norm[ids]))
            cached = (ids, weights)
            self._cache[term] = cached
        return cached

    def matches_any(self, tokens: Sequence[str]) -> bool:
        """True when at least one window contains at least one of the tokens."""
        return any(token in self._postings for token in tokens)

    def scores(self, tokens: Sequence[str]) -> NDArray[np.float64]:
        """BM25 score of the query tokens against each window (what `get_scores` returns)."""
        scores = np.zeros(self.size, dtype=np.float64)
        for token in tokens:
            if token in self._postings:
                ids, weights = self._term(token)
                scores[ids] += weights
        return scores
