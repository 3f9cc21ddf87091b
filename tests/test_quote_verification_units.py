"""Building blocks of quote verification on hand-made inputs: trimming by sliding BM25 and by
the hybrid method, and NFC composition with offsets for scripts without combining marks."""

from __future__ import annotations

import math
import unicodedata

import pytest

from groundwire.evaluators.quote_verification._bm25 import WindowIndex
from groundwire.evaluators.quote_verification._corpus import Corpus
from groundwire.evaluators.quote_verification._ellipsis import Located
from groundwire.evaluators.quote_verification._locate import Locator
from groundwire.evaluators.quote_verification._normalise import normalise
from groundwire.evaluators.quote_verification._options import Options
from groundwire.evaluators.quote_verification._trim import trim, window_ratio

_FILLER = " ".join(f"f{i}" for i in range(30))


def _flat(term: str) -> float:
    """The same idf for every term, so that only term frequencies rank the windows."""
    return 1.0


@pytest.mark.parametrize("method", ["sliding_bm25", "hybrid"])
@pytest.mark.parametrize(
    ("quote", "region", "k1", "span"),
    [
        # two equal windows: the first one wins
        ("alpha beta gamma", f"alpha beta gamma {_FILLER} alpha beta gamma", 1.5, (0, 16)),
        # the best window starts at the second word
        ("alpha beta gamma", f"x alpha beta gamma {_FILLER}", 1.5, (2, 18)),
        # the best window is the last one
        ("alpha beta gamma", f"{_FILLER} alpha beta gamma", 1.5, (110, 126)),
        # two different quote words beat one quote word twice (term frequency saturates)
        ("alpha beta", f"alpha alpha {_FILLER} alpha beta {_FILLER}", 1.5, (122, 132)),
        ("alpha beta", f"{_FILLER} alpha alpha {_FILLER} alpha beta", 1.5, (232, 242)),
        # a small k1 still ranks the window with the quote's words first
        ("alpha beta", f"zz yy {_FILLER} alpha beta {_FILLER}", 0.5, (116, 126)),
    ],
)
def test_word_window_trimming_finds_the_quote(
    method: str, quote: str, region: str, k1: float, span: tuple[int, int]
) -> None:
    """sliding_bm25 (and hybrid, which starts from it) keeps the window of the quote's word count
    with the highest BM25 score: the one holding the quote's words, the first of equal ones."""
    found = trim(method, quote, region, _flat, k1)  # type: ignore[arg-type]
    assert (found.start, found.end, found.ratio) == (*span, 1.0)
    assert region[found.start : found.end] == quote


def test_untrimmed_window_ratio_is_the_best_partial_match() -> None:
    """An untrimmed window scores the quote's best partial match: 1.0 when it holds the quote."""
    assert window_ratio("alpha", "xx alpha yy") == 1.0
    assert window_ratio("alpha", "xx alphx yy") == 0.8


def test_scripts_composed_without_combining_marks_keep_offsets() -> None:
    """Hangul typed as jamo (NFD) composes to syllables, each mapped to its three jamo."""
    decomposed = unicodedata.normalize("NFD", "한국 말")
    assert len(decomposed) == 10
    norm = normalise(decomposed)
    assert norm.text == "한국 말"
    assert norm.offsets.tolist() == [0, 3, 6, 7]
    assert norm.ends.tolist() == [3, 6, 7, 10]


def test_idf_is_zero_for_unknown_terms_for_an_empty_index_and_for_half_the_windows() -> None:
    """WindowIndex.idf is rank-bm25's idf: 0.0 for a term in no window or with no tokens at all,
    and log(1.5/1.5) = 0.0 (not a default) for a term in exactly half of the windows."""
    index = WindowIndex([["a"], ["b"]], k1=1.5, b=0.4)
    assert (index.idf("a"), index.idf("zzz")) == (0.0, 0.0)
    assert WindowIndex([[], []], k1=1.5, b=0.4).idf("a") == 0.0
    assert WindowIndex([["a"], ["b"], ["c"]], k1=1.5, b=0.4).idf("a") == pytest.approx(
        math.log(2.5 / 1.5)
    )


def test_locator_locate_gives_the_best_candidate_or_none() -> None:
    """Locator.locate: the exact hit, the best fuzzy span, or None when no word is shared."""
    options = Options.checked(
        window_size=None,
        overlap=None,
        bm25_k1=1.5,
        bm25_b=0.4,
        ellipsis_max_gap=None,
        trim_spans=True,
        trim_method="fuzzy",
        min_fuzzy_ratio=0.6,
        expand_window_neighbors=1,
    )
    corpus = Corpus([("a", "the quick brown fox jumps"), ("b", "lazy dogs sleep")])
    locator = Locator(corpus, options, 64, 19)
    assert locator.locate("quick brown fox") == Located(0, 4, 19, 1.0, None, None, "exact")
    assert locator.locate("zzz qqq") is None
    fuzzy = locator.locate("lazy dogz")
    assert fuzzy is not None and (fuzzy.doc, fuzzy.start, fuzzy.end, fuzzy.kind) == (
        1,
        0,
        9,
        "fuzzy",
    )
    assert fuzzy == locator.candidates("lazy dogz")[0]
