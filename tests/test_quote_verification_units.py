"""Building blocks of quote verification on hand-made inputs: trimming by sliding BM25 and by
the hybrid method, and NFC composition with offsets for scripts without combining marks."""

from __future__ import annotations

import math
import unicodedata

import pytest

from groundwire.evaluators import verify_quotes
from groundwire.evaluators.quote_verification._bm25 import WindowIndex
from groundwire.evaluators.quote_verification._corpus import Corpus, coerce_documents
from groundwire.evaluators.quote_verification._ellipsis import Located
from groundwire.evaluators.quote_verification._locate import Locator
from groundwire.evaluators.quote_verification._normalise import fold, normalise, normalise_quote
from groundwire.evaluators.quote_verification._options import Options
from groundwire.evaluators.quote_verification._trim import (
    Alignment,
    match_ratio,
    snap,
    trim,
    window_ratio,
)
from groundwire.evaluators.quote_verification._windows import make_windows

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


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"window_size": 0}, "window_size must be >= 1, got 0"),
        ({"window_size": 1.5}, "window_size must be an int or None, got float"),
        ({"window_size": True}, "window_size must be an int or None, got bool"),
        ({"overlap": -1}, "overlap must be >= 0, got -1"),
        (
            {"window_size": 50, "overlap": 50},
            "overlap must be smaller than window_size (50), got 50",
        ),
        ({"overlap": 10_000}, "overlap must be smaller than the window size (64), got 10000"),
        ({"bm25_k1": -1}, "bm25_k1 must be >= 0.0, got -1"),
        ({"bm25_k1": True}, "bm25_k1 must be a number, got bool"),
        ({"bm25_k1": "2"}, "bm25_k1 must be a number, got str"),
        ({"bm25_b": 1.5}, "bm25_b must be in [0.0, 1.0], got 1.5"),
        ({"bm25_b": -0.1}, "bm25_b must be in [0.0, 1.0], got -0.1"),
        ({"bm25_b": math.nan}, "bm25_b must be in [0.0, 1.0], got nan"),
        ({"ellipsis_max_gap": -1}, "ellipsis_max_gap must be >= 0, got -1"),
        ({"trim_spans": "yes"}, "trim_spans must be a bool, got str"),
        ({"meaning_check": 1}, "meaning_check must be a bool, got int"),
        (
            {"trim_method": "exact"},
            "trim_method must be one of ['fuzzy', 'sliding_bm25', 'hybrid'], got 'exact'",
        ),
        ({"min_fuzzy_ratio": 2}, "min_fuzzy_ratio must be in [0.0, 1.0], got 2"),
        ({"expand_window_neighbors": True}, "expand_window_neighbors must be an int, got bool"),
        ({"expand_window_neighbors": None}, "expand_window_neighbors must be an int, got NoneType"),
        ({"expand_window_neighbors": -1}, "expand_window_neighbors must be >= 0, got -1"),
    ],
)
def test_bad_options_give_exact_messages(options: dict[str, object], message: str) -> None:
    """Every bad option is refused with a message naming it, what it accepts and what it got."""
    with pytest.raises((TypeError, ValueError)) as raised:
        verify_quotes(["a quote"], ["x"], embedder=None, **options)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_options_accept_their_bounds_and_normalise_numbers() -> None:
    """The bounds themselves are accepted; numbers become floats, counts stay ints."""
    low = Options.checked(
        window_size=1,
        overlap=0,
        bm25_k1=0,
        bm25_b=0,
        ellipsis_max_gap=0,
        trim_spans=False,
        trim_method="hybrid",
        min_fuzzy_ratio=0,
        expand_window_neighbors=0,
        meaning_check=False,
    )
    assert low == Options(1, 0, 0.0, 0.0, 0, False, "hybrid", 0.0, 0, False)
    assert isinstance(low.bm25_k1, float) and isinstance(low.min_fuzzy_ratio, float)
    high = Options.checked(
        window_size=None,
        overlap=None,
        bm25_k1=2,
        bm25_b=1,
        ellipsis_max_gap=None,
        trim_spans=True,
        trim_method="sliding_bm25",
        min_fuzzy_ratio=1,
        expand_window_neighbors=3,
    )
    assert high == Options(None, None, 2.0, 1.0, None, True, "sliding_bm25", 1.0, 3, True)


_MIXED = (
    "A\t\u201cBig\u201d  \n Stra\u00dfe \u2014 \u0130stanbul \u2018x\u2019 \u03a3\u039f\u03a3 "
    "e\u0301t\u00e9\u3000end "
)


def test_normalise_folds_case_marks_and_spaces_keeping_original_offsets() -> None:
    """normalise: one-to-one case folding (ß and İ, which would expand, are kept), typographic
    quotes and dashes made plain, any whitespace run one space, NFC; each character keeps the
    original span it came from."""
    norm = normalise(_MIXED)
    assert norm.text == "a \"big\" straße - İstanbul 'x' σοσ été end "
    assert norm.original_length == 46
    assert norm.offsets.tolist() == [*range(8), *range(11, 38), *range(39, 46)]
    assert norm.ends.tolist() == [*range(1, 9), *range(12, 38), *range(39, 47)]
    assert norm.to_original(2, 7) == (2, 7)
    assert norm.to_original(3, 3) == (3, 3)
    assert norm.to_original(len(norm.text), len(norm.text)) == (46, 46)
    plain = normalise("plain  text")
    assert (plain.text, plain.offsets.tolist(), plain.ends.tolist()) == (
        "plain text",
        [0, 1, 2, 3, 4, 5, 7, 8, 9, 10],
        [1, 2, 3, 4, 5, 6, 8, 9, 10, 11],
    )


def test_fold_keeps_every_space_and_normalise_quote_strips() -> None:
    """fold is normalise without collapsing whitespace; normalise_quote also strips the ends."""
    folded = fold(_MIXED)
    assert folded.text == "a \"big\"    straße - İstanbul 'x' σοσ été end "
    assert folded.offsets.tolist()[:12] == list(range(12))
    assert folded.offsets.tolist()[-8:] == [37, 39, 40, 41, 42, 43, 44, 45]
    assert folded.ends.tolist()[-8:] == [39, 40, 41, 42, 43, 44, 45, 46]
    ascii_fold = fold("ab")
    assert (ascii_fold.offsets.tolist(), ascii_fold.ends.tolist()) == ([0, 1], [1, 2])
    assert normalise_quote("  \u201cA\u00a0\u00a0B\u201d \u2013 C  ") == '"a b" - c'


def test_corpus_exact_search_verbatim_preference_offsets_and_windows() -> None:
    """Corpus: global offsets skip a blank line between documents (empty ones too); exact search
    in normalised text returns up to `limit` hits in order, never across documents; the
    verbatim search prefers the first hit, else the first document holding the quote as
    written; windows cover each non-empty document and are built once per setting."""
    corpus = Corpus([("a", "The  Cat sat. the cat"), ("b", ""), ("c", "A cat, THE CAT.")])
    assert corpus.global_starts == [0, 23, 25]
    assert corpus.find_exact("the cat", limit=5) == [(0, 0, 7), (0, 13, 20), (2, 7, 14)]
    assert corpus.find_exact("the cat") == [(0, 0, 7)]
    assert corpus.find_exact("cat, the", limit=5) == [(2, 2, 10)]
    assert corpus.find_exact("cat the", limit=5) == []
    assert corpus.find_exact("", limit=5) == []
    first = corpus.find_exact("the cat")[0]
    assert corpus.find_verbatim("The  Cat", first) == (0, 0, 7)
    assert corpus.find_verbatim("the cat", first) == (0, 13, 20)
    assert corpus.find_verbatim("THE CAT", first) == (2, 7, 14)
    assert corpus.find_verbatim("tHe cAt", first) is None
    windows, index = corpus.index(10, 3, 1.5, 0.4)
    assert [(w.doc, w.start, w.end) for w in windows] == [
        (0, 0, 10),
        (0, 7, 17),
        (0, 10, 20),
        (2, 0, 10),
        (2, 5, 15),
    ]
    assert corpus.index(10, 3, 1.5, 0.4)[1] is index
    assert corpus.index(10, 2, 1.5, 0.4)[1] is not index
    assert coerce_documents(("x", "y")) == [("doc_0", "x"), ("doc_1", "y")]


@pytest.mark.parametrize(
    ("quote", "region", "expected"),
    [
        ("quick brown fox", "the quick brown fox jumps over", ("quick brown fox", 4, 19, 1.0)),
        # a partial alignment cutting words is widened to whole words
        ("uick brown fo", "the quick brown fox jumps over", ("quick brown fox", 4, 19, 0.631)),
        (
            "brown fox jumped",
            "a quick brown fox jumps over the lazy dog",
            ("brown fox jumps", 8, 23, 0.7849),
        ),
        # punctuation and apostrophes stay inside the span
        ("fox jumps (over)", "the fox jumps (over) the dog", ("fox jumps (over)", 4, 20, 1.0)),
        ("the dog's bone", "he took the dog's bone away", ("the dog's bone", 8, 22, 1.0)),
        (
            "snake_case name",
            "use snake_case names here",
            ("snake_case names", 4, 20, 0.7339),
        ),
    ],
)
def test_fuzzy_trimming_snaps_to_whole_words(
    quote: str, region: str, expected: tuple[str, int, int, float]
) -> None:
    """Fuzzy trimming aligns the quote in the region and moves the ends to word boundaries."""
    found = trim("fuzzy", quote, region, _flat, 1.5)
    assert (region[found.start : found.end], found.start, found.end, round(found.ratio, 4)) == (
        expected
    )


def test_snap_keeps_an_aligned_span_and_scores_it() -> None:
    """snap leaves a span already on word boundaries alone; without any word nearby it keeps
    the span as given; the ratio is match_ratio, the mean of character and word similarity."""
    assert snap("brown fox", "the brown fox ran", 5, 12, 8) == Alignment(4, 13, 1.0)
    assert snap("brown fox", "   ", 0, 2, 8) == Alignment(0, 2, match_ratio("brown fox", "  "))
    assert match_ratio("brown fox", "brown fax") == pytest.approx((8 / 9 + 0.5) / 2)
    assert match_ratio("a b", "b a") == pytest.approx((1 / 3 + 0.5) / 2)


@pytest.mark.parametrize(
    ("quotes", "documents", "options", "message"),
    [
        (
            "a quote",
            ["x"],
            {},
            "quotes must be a list of strings, got str (wrap a single quote in a list)",
        ),
        (42, ["x"], {}, "quotes must be a list of strings, got int"),
        (b"q", ["x"], {}, "quotes must be a list of strings, got bytes"),
        (["ok", 3], ["x"], {}, "quotes[1] must be a str, got int"),
        (["ok", " \n"], ["x"], {}, "quotes[1] is empty or whitespace only"),
        (
            ["q"],
            "doc",
            {},
            "documents must be a mapping of name -> text or a list of texts, got str",
        ),
        (
            ["q"],
            5,
            {},
            "documents must be a mapping of name -> text or a list of texts, got int",
        ),
        (["q"], {"a": 1}, {}, "documents['a'] must be a str, got int"),
        (["q"], {2: "t"}, {}, "documents: keys must be str names, got int"),
        (["q"], ["t", None], {}, "documents[1] must be a str, got NoneType"),
        (
            ["q"],
            ["x"],
            {"embedder": "e5"},
            "embedder must have an embed(texts) method or be None, got str",
        ),
    ],
)
def test_bad_quotes_and_documents_give_exact_messages(
    quotes: object, documents: object, options: dict[str, object], message: str
) -> None:
    """Bad quotes, documents or embedder are refused naming the item and its type."""
    options = {"embedder": None, **options}
    with pytest.raises((TypeError, ValueError)) as raised:
        verify_quotes(quotes, documents, **options)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_quotes_may_be_any_iterable() -> None:
    """Quotes can come from a generator, not only a list."""
    (row,) = verify_quotes(iter(["a b"]), ["a b c"], embedder=None)
    assert (row.match_kind, row.doc_start, row.doc_end) == ("exact", 0, 3)


def test_verbatim_search_takes_the_first_occurrence_even_at_the_start() -> None:
    """When the first normalised hit is not verbatim, the first verbatim occurrence in document
    order is used, even at offset 0."""
    corpus = Corpus([("a", "The Cat"), ("b", "the cat and the cat")])
    first = corpus.find_exact("the cat")[0]
    assert first == (0, 0, 7)
    assert corpus.find_verbatim("the cat", first) == (1, 0, 7)


def test_windows_that_end_exactly_at_the_document_end_are_not_repeated() -> None:
    """A window landing exactly on the document's end is the last one, not added twice."""
    assert [(w.start, w.end) for w in make_windows([20], 10, 5)] == [(0, 10), (5, 15), (10, 20)]
    assert [(w.doc, w.start, w.end) for w in make_windows([0, 4], 10, 5)] == [(1, 0, 4)]
