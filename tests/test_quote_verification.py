"""`verify_quotes`: exact, re-spaced, typo, ellipsis and invented quotes; options; bad input."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from rank_bm25 import BM25Okapi

from groundwire.evaluators import QuoteMatch, verify_quotes
from groundwire.evaluators.quote_verification._bm25 import DocumentTokens, WindowIndex, tokenize
from groundwire.evaluators.quote_verification._normalise import normalise, normalise_quote
from groundwire.evaluators.quote_verification._windows import (
    default_overlap,
    default_window_size,
    make_windows,
)

_WORDS = [
    "river",
    "stone",
    "lantern",
    "harbour",
    "copper",
    "meadow",
    "violet",
    "engine",
    "signal",
    "orchard",
    "thunder",
    "ribbon",
    "marble",
    "falcon",
    "canyon",
    "silver",
    "window",
    "garden",
    "winter",
    "kettle",
    "pepper",
    "saddle",
    "tunnel",
    "anchor",
    "basket",
    "candle",
    "dragon",
    "feather",
    "glacier",
    "hammer",
    "island",
    "jungle",
    "ladder",
    "mirror",
    "needle",
    "oyster",
    "parrot",
    "quarry",
    "rocket",
    "shadow",
    "temple",
    "umbrella",
    "valley",
    "walnut",
    "yellow",
    "zephyr",
]


def corpus(seed: int = 7, docs: int = 4, sentences: int = 40) -> dict[str, str]:
    """Deterministic documents of pseudo-sentences with irregular whitespace."""
    rng = random.Random(seed)
    out: dict[str, str] = {}
    for d in range(docs):
        parts = []
        for _ in range(sentences):
            words = rng.choices(_WORDS, k=rng.randint(6, 14))
            parts.append(words[0].capitalize() + " " + " ".join(words[1:]) + ".")
        out[f"d{d}"] = rng.choice(("  ", "\n", " ")).join(parts)
    return out


def joined(documents: dict[str, str]) -> str:
    """The documents as global offsets index them."""
    return "\n\n".join(documents.values())


def check_offsets(row: QuoteMatch, documents: dict[str, str]) -> None:
    """Every offset of a located row points at its span_text."""
    assert row.source_doc is not None
    assert row.doc_start is not None and row.doc_end is not None
    assert documents[row.source_doc][row.doc_start : row.doc_end] == row.span_text
    assert joined(documents)[row.global_start : row.global_end] == row.span_text
    assert row.span_text in row.context_window


DOCS = corpus()


def test_exact_quote_found_with_original_offsets() -> None:
    """An exact quote is an exact hit: ratio 1.0, not flagged, no BM25, original offsets."""
    text = DOCS["d2"]
    start = text.index(" ", 500) + 1
    end = text.index(" ", start + 60)
    quote = text[start:end]
    (row,) = verify_quotes([quote], DOCS, embedder=None)
    check_offsets(row, DOCS)
    assert (row.source_doc, row.doc_start, row.doc_end) == ("d2", start, end)
    assert row.match_kind == "exact"
    assert row.match_ratio == 1.0 and not row.low_confidence
    assert row.bm25_score is None and row.bm25_ratio is None
    assert row.cosine_similarity is None


def test_respaced_and_recased_quote_maps_back_to_original_text() -> None:
    """Whitespace runs, case and curly quotes are normalised; the span is the original text."""
    documents = {"a": "Intro.\n\nHe  said:\t“It’s   the\nEND of   the WORLD”, and left."}
    (row,) = verify_quotes(['"it\'s the end OF the world"'], documents, embedder=None)
    check_offsets(row, documents)
    assert row.span_text == "“It’s   the\nEND of   the WORLD”"
    assert row.match_kind == "exact" and row.match_ratio == 1.0


def test_case_fold_that_would_expand_keeps_offsets() -> None:
    """Characters whose case fold is longer (ß, İ) do not shift the offsets of what follows."""
    documents = ["Die Straße ist İstanbul gewidmet, sagt der Stadtrat von Köln."]
    (row,) = verify_quotes(["ist İSTANBUL gewidmet, sagt DER"], documents, embedder=None)
    check_offsets(row, {"doc_0": documents[0]})
    assert row.span_text == "ist İstanbul gewidmet, sagt der"


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["ab", "Cd", "ß", "É", " ", "\n", "  ", "x.y", "’", "—"]), min_size=3),
    st.data(),
)
def test_any_substring_that_cuts_no_word_is_an_exact_hit_at_a_matching_span(
    pieces: list[str], data: st.DataObject
) -> None:
    """Property: a substring of a document is found exactly, at a span that normalises to it,
    when it occurs somewhere without starting or ending inside a word; otherwise never exactly
    ("grew 5" is not in "grew 50")."""
    text = "".join(pieces)
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    quote = text[start:end]
    if not quote.strip():
        return
    (row,) = verify_quotes([quote], [text], embedder=None)
    needle = normalise_quote(quote)
    edges = (
        (r"(?<!\w)" if re.match(r"\w", needle[0]) else "")
        + re.escape(needle)
        + (r"(?!\w)" if re.match(r"\w", needle[-1]) else "")
    )
    if re.search(edges, normalise(text).text) is None:
        assert row.match_kind != "exact"
        return
    assert row.match_kind == "exact"
    check_offsets(row, {"doc_0": text})
    assert normalise_quote(row.span_text) == needle


@pytest.mark.parametrize(
    ("quote", "document", "span"),
    [
        ("revenue grew 5", "Revenue grew 50% this year.", "Revenue grew 50"),
        (
            "the board approved fiv",
            "Then the board approved five projects.",
            "the board approved five",
        ),
        ("7 per cent", "Costs rose 17 per cent.", "17 per cent"),
    ],
)
def test_a_quote_that_stops_inside_a_source_word_is_not_an_exact_hit(
    quote: str, document: str, span: str
) -> None:
    """A quote cut inside a word of the source is not that word: it is located (fuzzy, snapped to
    whole words) below a ratio of 1; a changed number is flagged and said, a clipped word is an
    edit like a typo."""
    (row,) = verify_quotes([quote], [document], embedder=None)
    assert row.match_kind == "fuzzy"
    assert row.span_text == span
    assert row.match_ratio < 1.0
    number = any(ch.isdigit() for ch in quote)
    assert row.low_confidence is number
    assert [c.kind for c in row.meaning_changes] == (["number"] if number else [])


def test_an_occurrence_inside_a_word_is_skipped_for_the_first_whole_one() -> None:
    """The first occurrence is inside longer words; the exact hit is the next whole one (not a
    later one)."""
    document = "Weather reports. Then the report said it. And the report said more."
    (row,) = verify_quotes(["the report said"], [document], embedder=None)
    assert row.match_kind == "exact"
    assert (row.global_start, row.global_end) == (22, 37)


@pytest.mark.parametrize(
    "first",
    ["The Report said so. Bathe report said no.", "The Report said so. Then the report saidx."],
)
def test_a_verbatim_occurrence_must_be_whole_too(first: str) -> None:
    """The verbatim search (same case) skips occurrences that cut a word at either end, so the
    span is the whole verbatim one in the next document, not the first normalised hit."""
    documents = {"a": first, "b": "Later, the report said yes."}
    (row,) = verify_quotes(["the report said"], documents, embedder=None)
    assert (row.source_doc, row.doc_start, row.match_kind) == ("b", 7, "exact")


@pytest.mark.parametrize(
    ("quote", "document"),
    [
        ("東京タワーの高さは", "東京タワーの高さは333メートルです。"),
        ("ตึกสูงมาก", "วันนี้ตึกสูงมากจริงๆ"),
    ],
)
def test_scripts_written_without_spaces_still_get_exact_hits(quote: str, document: str) -> None:
    """In Japanese or Thai any character boundary may end a word: an inner substring is exact."""
    (row,) = verify_quotes([quote], [document], embedder=None)
    assert row.match_kind == "exact"
    assert row.span_text == quote


def test_normalised_offsets_point_at_original_characters() -> None:
    """Each normalised character maps to the original character it came from."""
    norm = normalise("A  B\n\tC ß")
    assert norm.text == "a b c ß"
    assert [int(i) for i in norm.offsets] == [0, 1, 3, 4, 6, 7, 8]
    assert norm.to_original(2, 5) == (3, 7)


def typo(text: str, rng: random.Random, edits: int) -> str:
    """Apply letter substitutions at random positions."""
    chars = list(text)
    for _ in range(edits):
        i = rng.choice([i for i, c in enumerate(chars) if c.isalpha()])
        chars[i] = "q" if chars[i] != "q" else "z"
    return "".join(chars)


@pytest.mark.parametrize("trim_method", ["fuzzy", "sliding_bm25", "hybrid"])
def test_typo_quote_located_by_every_trim_method(trim_method: str) -> None:
    """A quote with typos is located (the span is the source passage) and not flagged."""
    rng = random.Random(3)
    text = DOCS["d1"]
    for _ in range(5):
        start = text.index(" ", rng.randrange(0, len(text) - 200)) + 1
        end = text.index(" ", start + 70)
        source = text[start:end]
        (row,) = verify_quotes(
            [typo(source, rng, 2)],
            DOCS,
            embedder=None,
            trim_method=trim_method,  # type: ignore[arg-type]
        )
        check_offsets(row, DOCS)
        assert row.match_kind == "fuzzy"
        assert not row.low_confidence
        assert row.source_doc == "d1"
        overlap = min(end, row.doc_end or 0) - max(start, row.doc_start or 0)
        assert overlap >= 0.9 * (end - start), (source, row.span_text)
        assert row.bm25_score is not None and row.bm25_score > 0
        assert row.bm25_ratio is not None


def test_bm25_ratio_is_top1_over_top2_of_rank_bm25_scores() -> None:
    """bm25_score/bm25_ratio come from rank-bm25's BM25Okapi over the card's windows."""
    text = DOCS["d0"]
    source = text[200:290]
    quote = typo(source, random.Random(1), 2)
    (row,) = verify_quotes([quote], DOCS, embedder=None)
    norms = [normalise(t) for t in DOCS.values()]
    size = max(64, min(500, -(-11 * len(normalise_quote(quote)) // 10)))
    windows = make_windows([len(n.text) for n in norms], size, round(0.3 * size))
    okapi = BM25Okapi(
        [tokenize(norms[w.doc].text[w.start : w.end]) for w in windows], k1=1.5, b=0.4
    )
    scores = np.sort(okapi.get_scores(tokenize(normalise_quote(quote))))[::-1]
    assert row.bm25_ratio == pytest.approx(scores[0] / (scores[1] + 1e-9))
    assert row.bm25_score == pytest.approx(scores[0])


def test_window_index_scores_equal_rank_bm25() -> None:
    """The inverted index returns exactly BM25Okapi.get_scores for any query."""
    rng = random.Random(5)
    windows = [rng.choices(_WORDS, k=rng.randint(0, 30)) for _ in range(60)]
    windows[3] = []
    okapi = BM25Okapi(windows, k1=1.2, b=0.6)
    index = WindowIndex(windows, k1=1.2, b=0.6)
    assert all(index.idf(term) == okapi.idf[term] for term in okapi.idf)
    for _ in range(20):
        query = rng.choices([*_WORDS, "absent"], k=rng.randint(1, 8))
        assert np.allclose(index.scores(query), okapi.get_scores(query))


@pytest.mark.parametrize("mark", [" ... ", "…", " .... ", "... "])
def test_ellipsis_quote_spans_head_start_to_tail_end(mark: str) -> None:
    """Head and tail are matched separately; the span runs from head start to tail end."""
    text = DOCS["d3"]
    start = text.index(" ", 300) + 1
    words = text[start:].split()
    head, tail = " ".join(words[:6]), " ".join(words[14:20])
    end = text.index(tail, start) + len(tail)
    (row,) = verify_quotes([head + mark + tail], DOCS, embedder=None)
    check_offsets(row, DOCS)
    assert (row.source_doc, row.doc_start, row.doc_end) == ("d3", start, end)
    assert row.match_kind == "ellipsis" and row.match_ratio == 1.0


def test_ellipsis_gap_limit_rejects_a_far_tail() -> None:
    """With ellipsis_max_gap smaller than the omitted text, head and tail cannot pair: flagged."""
    documents = {
        "a": "alpha beta gamma delta " + "filler words here " * 30 + "omega psi chi phi end."
    }
    quote = "alpha beta gamma delta … omega psi chi phi"
    (free,) = verify_quotes([quote], documents, embedder=None)
    (limited,) = verify_quotes([quote], documents, embedder=None, ellipsis_max_gap=50)
    assert free.match_kind == "ellipsis" and not free.low_confidence
    assert free.span_text.startswith("alpha") and free.span_text.endswith("phi")
    assert limited.low_confidence
    assert limited.match_ratio < 0.6


def test_ellipsis_tail_before_head_is_not_paired() -> None:
    """A tail that only occurs before the head does not make a span (order matters)."""
    documents = {"a": "omega psi chi phi. " + "and so on " * 20 + "alpha beta gamma delta."}
    (row,) = verify_quotes(
        ["alpha beta gamma delta ... omega psi chi phi"], documents, embedder=None
    )
    assert row.low_confidence


def test_ellipsis_at_the_end_matches_the_rest_exactly() -> None:
    """A leading or trailing ellipsis only marks truncation: the rest is matched as is."""
    documents = {"a": "We shall fight on the beaches, we shall fight on the landing grounds."}
    rows = verify_quotes(
        ["...we shall fight on the beaches", "on the landing grounds…"], documents, embedder=None
    )
    assert [row.match_kind for row in rows] == ["exact", "exact"]
    assert rows[0].span_text == "We shall fight on the beaches"


def test_invented_quotes_are_flagged_and_exact_never() -> None:
    """Made-up quotes of the documents' own words are low-confidence; exact quotes never are."""
    rng = random.Random(11)
    text = joined(DOCS).lower()
    invented = []
    while len(invented) < 20:
        quote = " ".join(rng.choices(_WORDS, k=rng.randint(5, 14)))
        if quote not in text:
            invented.append(quote)
    exact = []
    for _ in range(20):
        doc = DOCS[rng.choice(list(DOCS))]
        start = doc.index(" ", rng.randrange(0, len(doc) - 120)) + 1
        exact.append(doc[start : doc.index(" ", start + rng.randint(10, 80))])
    rows = verify_quotes(invented + exact, DOCS, embedder=None)
    assert all(row.low_confidence for row in rows[:20]), [r.match_ratio for r in rows[:20]]
    assert not any(row.low_confidence for row in rows[20:])


def test_quote_sharing_no_word_with_documents_is_not_found() -> None:
    """No shared word: no span, ratio 0, flagged, match_kind none."""
    (row,) = verify_quotes(["zzz qqq xxx"], DOCS, embedder=None)
    assert row.to_dict() == {
        "quote": "zzz qqq xxx",
        "source_doc": None,
        "span_text": "",
        "context_window": "",
        "bm25_score": None,
        "bm25_ratio": None,
        "global_start": None,
        "global_end": None,
        "match_ratio": 0.0,
        "cosine_similarity": None,
        "doc_start": None,
        "doc_end": None,
        "low_confidence": True,
        "match_kind": "none",
        "edits": [],
        "meaning_changes": [],
        "low_confidence_reason": "not found: no document shares a word with the quote",
    }


def test_repeated_passage_may_be_placed_at_any_occurrence() -> None:
    """A passage occurring twice is placed at one of its occurrences."""
    documents = ["one two three four five. six seven.", "x y z one two three four five."]
    (row,) = verify_quotes(["one two thre four five"], documents, embedder=None)
    assert row.global_start in {0, len(documents[0]) + 2 + 6}
    assert row.span_text == "one two three four five"


def test_list_documents_are_named_doc_i_and_global_offsets_skip_separators() -> None:
    """A list is named doc_0, doc_1, ...; global offsets count the blank line between documents."""
    documents = ["first document text.", "second document, the one with the quote."]
    (row,) = verify_quotes(["the one with the quote"], documents, embedder=None)
    assert row.source_doc == "doc_1"
    assert row.doc_start == 17
    assert row.global_start == len(documents[0]) + 2 + 17


def test_context_window_is_300_characters_each_side() -> None:
    """context_window holds up to 300 characters of the document on each side of the span."""
    documents = {"a": "x" * 400 + " the quoted passage is here " + "y" * 400}
    (row,) = verify_quotes(["the quoted passage is here"], documents, embedder=None)
    assert row.doc_start is not None and row.doc_end is not None
    assert row.context_window == documents["a"][row.doc_start - 300 : row.doc_end + 300]


def test_quote_straddling_windows_is_expanded_to_neighbours() -> None:
    """A match touching a window edge widens to the neighbour windows (expand_window_neighbors)."""
    text = DOCS["d0"]
    start = text.index(" ", 100) + 1
    end = text.index(" ", start + 150)
    quote = typo(text[start:end], random.Random(2), 3)
    options = {"embedder": None, "window_size": 100, "overlap": 10}
    (wide,) = verify_quotes([quote], DOCS, **options)  # type: ignore[arg-type]
    (narrow,) = verify_quotes([quote], DOCS, expand_window_neighbors=0, **options)  # type: ignore[arg-type]
    assert wide.doc_start is not None and wide.doc_end is not None
    assert abs(wide.doc_start - start) <= 2 and abs(wide.doc_end - end) <= 2
    assert not wide.low_confidence
    assert narrow.match_ratio < wide.match_ratio
    assert len(narrow.span_text) <= 100


def test_untrimmed_span_is_the_whole_best_window() -> None:
    """trim_spans=False returns the best BM25 window itself, which contains the quote."""
    text = DOCS["d2"]
    source = text[600:660]
    quote = typo(source, random.Random(4), 1)
    (row,) = verify_quotes([quote], DOCS, embedder=None, trim_spans=False)
    assert row.match_kind == "fuzzy"
    assert len(row.span_text) >= len(normalise_quote(quote))
    assert row.match_ratio > 0.9


def test_quote_longer_than_every_document() -> None:
    """A long invented quote is flagged; a quote equal to a whole document is an exact hit."""
    documents = ["short text about harbour copper.", "another short meadow text."]
    long_quote = " ".join(_WORDS) * 3
    rows = verify_quotes([long_quote, "another  short meadow text."], documents, embedder=None)
    assert rows[0].low_confidence
    assert rows[1].match_kind == "exact" and rows[1].span_text == documents[1]


class _CountingEmbedder:
    """A user-supplied embedder: bag of letters, records its calls."""

    def __init__(self) -> None:
        """Start with no calls recorded."""
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """Letter counts per text."""
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 26))
        for i, text in enumerate(texts):
            for char in re.sub(r"[^a-z]", "", text.lower()):
                out[i, ord(char) - 97] += 1
        return out


def test_custom_embedder_is_called_once_for_all_pairs() -> None:
    """A user's embedder embeds quotes and spans in one call; rows without a span get None."""
    embedder = _CountingEmbedder()
    rows = verify_quotes(
        ["Harbour copper", "zzz qqq"], ["the harbour copper lantern"], embedder=embedder
    )
    assert embedder.calls == [["Harbour copper", "harbour copper"]]
    assert rows[0].cosine_similarity == pytest.approx(1.0)
    assert rows[1].cosine_similarity is None


def test_embedder_returning_a_bad_shape_is_an_error() -> None:
    """An embedder returning the wrong number of rows raises, naming the shape."""

    class Broken:
        """An embedder that returns one row whatever it is given."""

        def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
            """One zero row, whatever the input."""
            return np.zeros((1, 3))

    with pytest.raises(ValueError, match=r"returned shape \(1, 3\), expected \(2, d\)"):
        verify_quotes(["harbour copper"], ["harbour copper"], embedder=Broken(), cosine="always")


def test_default_embedder_gives_cosine_that_separates_true_from_invented() -> None:
    """With the real default model, an exact quote's cosine is ~1 and beats an invented one's."""
    documents = {"a": "The central bank raised interest rates by half a point on Tuesday."}
    rows = verify_quotes(
        ["raised interest rates by half a point", "the football team won the cup final"],
        documents,
    )
    assert rows[0].cosine_similarity is not None and rows[0].cosine_similarity > 0.99
    assert rows[1].cosine_similarity is not None
    assert rows[1].cosine_similarity < rows[0].cosine_similarity - 0.1


# --- bad input ------------------------------------------------------------------------------


def test_empty_quote_list_gives_no_rows() -> None:
    """No quotes, no rows (and no work)."""
    assert verify_quotes([], DOCS) == []


@pytest.mark.parametrize("documents", [[], {}, [""], {"a": "", "b": "   \n "}])
def test_empty_documents_leave_every_quote_unverified(documents: object) -> None:
    """No document text: each quote gets an unmatched, flagged row."""
    rows = verify_quotes(["some quote here"], documents, embedder=None)  # type: ignore[arg-type]
    assert [(r.match_kind, r.low_confidence, r.source_doc) for r in rows] == [("none", True, None)]


@pytest.mark.parametrize(
    ("quotes", "error", "message"),
    [
        ("a single string", TypeError, r"quotes must be a list of strings, got str \(wrap"),
        (42, TypeError, "quotes must be a list of strings, got int"),
        (["ok quote", 3], TypeError, r"quotes\[1\] must be a str, got int"),
        (["ok quote", None], TypeError, r"quotes\[1\] must be a str, got NoneType"),
        (["ok quote", "  \n"], ValueError, r"quotes\[1\] is empty"),
    ],
)
def test_bad_quotes_raise_naming_the_item(
    quotes: object, error: type[Exception], message: str
) -> None:
    """Quotes must be a list of non-empty strings; the error names the offending item."""
    with pytest.raises(error, match=message):
        verify_quotes(quotes, DOCS, embedder=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ("just a string", "documents must be a mapping of name -> text or a list of texts"),
        (["fine", b"bytes"], r"documents\[1\] must be a str, got bytes"),
        ({"a": "fine", "b": None}, r"documents\['b'\] must be a str, got NoneType"),
        ({1: "text"}, "documents: keys must be str names, got int"),
    ],
)
def test_bad_documents_raise_naming_the_item(documents: object, message: str) -> None:
    """Documents must be str texts by str name (or a list of str); the error names the item."""
    with pytest.raises(TypeError, match=message):
        verify_quotes(["a quote"], documents, embedder=None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"window_size": 0}, ValueError, "window_size must be >= 1, got 0"),
        ({"window_size": 1.5}, TypeError, "window_size must be an int or None, got float"),
        (
            {"window_size": 50, "overlap": 50},
            ValueError,
            "overlap must be smaller than window_size",
        ),
        ({"overlap": 10_000}, ValueError, r"overlap must be smaller than the window size \(\d+\)"),
        ({"bm25_k1": -1}, ValueError, "bm25_k1 must be >= 0.0"),
        ({"bm25_b": 1.5}, ValueError, r"bm25_b must be in \[0.0, 1.0\]"),
        ({"ellipsis_max_gap": -1}, ValueError, "ellipsis_max_gap must be >= 0"),
        ({"trim_spans": "yes"}, TypeError, "trim_spans must be a bool"),
        ({"trim_method": "exact"}, ValueError, "trim_method must be one of"),
        ({"min_fuzzy_ratio": 2}, ValueError, r"min_fuzzy_ratio must be in \[0.0, 1.0\]"),
        ({"expand_window_neighbors": True}, TypeError, "expand_window_neighbors must be an int"),
        ({"embedder": "e5"}, TypeError, "embedder must have an embed"),
    ],
)
def test_bad_options_raise_naming_the_option(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    """Each option is validated up front; the error names the option and what it accepts."""
    with pytest.raises(error, match=message):
        verify_quotes(["a quote"], DOCS, **options)  # type: ignore[arg-type]


def test_bracketed_ellipsis_drops_the_brackets() -> None:
    """An editorial "[...]" or "(…)" is an ellipsis; its brackets are not part of head or tail."""
    documents = {
        "a": "The report found that costs rose sharply in the north and fell in the south."
    }
    for mark in (" [...] ", " (…) ", "[…]"):
        (row,) = verify_quotes(
            [f"costs rose sharply{mark}fell in the south"], documents, embedder=None
        )
        assert row.match_kind == "ellipsis" and row.match_ratio == 1.0
        assert row.span_text == "costs rose sharply in the north and fell in the south"


def test_public_names_are_exported() -> None:
    """The package's __all__ is what we promise, and groundwire.evaluators re-exports it lazily."""
    import groundwire.evaluators as evaluators
    from groundwire.evaluators import quote_verification

    assert set(quote_verification.__all__) == {
        "LABELS",
        "ChangeKind",
        "EditKind",
        "MatchKind",
        "MeaningChange",
        "QuoteEdit",
        "QuoteMatch",
        "QuoteStats",
        "QuoteVerification",
        "TrimMethod",
        "quote_stats",
        "verify_quotes",
        "write_quotes_xlsx",
        "write_stats_csv",
    }
    for name in (
        "QuoteVerification",
        "QuoteMatch",
        "QuoteStats",
        "verify_quotes",
        "quote_stats",
        "write_stats_csv",
        "write_quotes_xlsx",
    ):
        assert getattr(evaluators, name) is getattr(quote_verification, name)


@settings(max_examples=80, deadline=None)
@given(st.text(alphabet="ab cd_.é\n", max_size=60), st.integers(0, 60), st.integers(0, 60))
def test_window_tokens_equal_tokenising_the_window_text(text: str, start: int, size: int) -> None:
    """Property: tokens of a window taken from the document pass equal tokenize(window text)."""
    end = min(len(text), start + size)
    start = min(start, end)
    assert DocumentTokens(text).window(start, end) == tokenize(text[start:end])


def test_derived_window_size_follows_the_card_within_bounds() -> None:
    """1.1 x the longest quote, capped at 500, never below 64 characters."""
    assert default_window_size(90) == 99
    assert default_window_size(200) == 220
    assert default_window_size(1000) == 500
    assert default_window_size(3) == 64
    assert default_window_size(61) == 68  # 67.1 rounds up: a window never falls short
    assert default_overlap(220) == 66


_ALPHABET = st.sampled_from(
    ["ab", "cd", "ef", "Gh", " ", "  ", "\n", ".", "...", "…", ",", "ß", "’", "e\u0301", "é", "3"]
)


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.lists(_ALPHABET, max_size=40).map("".join), min_size=1, max_size=3),
    st.lists(st.lists(_ALPHABET, min_size=1, max_size=12).map("".join), min_size=1, max_size=4),
    st.sampled_from(["fuzzy", "sliding_bm25", "hybrid"]),
    st.booleans(),
)
def test_any_input_gives_consistent_rows(
    docs: list[str], quotes: list[str], trim_method: str, trim_spans: bool
) -> None:
    """Property: any quotes against any documents give one consistent row per quote, no crash."""
    quotes = [q for q in quotes if q.strip()]
    documents = {f"d{i}": text for i, text in enumerate(docs)}
    rows = verify_quotes(
        quotes,
        documents,
        embedder=None,
        trim_method=trim_method,  # type: ignore[arg-type]
        trim_spans=trim_spans,
        window_size=None if trim_spans else 8,
        overlap=None if trim_spans else 2,
    )
    assert [row.quote for row in rows] == quotes
    for row in rows:
        assert 0.0 <= row.match_ratio <= 1.0
        assert row.low_confidence == (row.match_ratio < 0.6 or bool(row.meaning_changes))
        assert (row.low_confidence_reason is not None) == row.low_confidence
        if row.source_doc is not None:
            check_offsets(row, documents)
            text = documents[row.source_doc]
            for edit in (*row.edits, *row.meaning_changes):
                assert row.quote[edit.quote_start : edit.quote_end] == edit.quote_text
                assert text[edit.source_start : edit.source_end] == edit.source_text
        else:
            assert row.match_kind == "none" and row.span_text == ""


def test_ellipsis_tail_with_typo_is_found_right_after_the_head() -> None:
    """A misspelt tail that BM25 ranks below a decoy passage is searched right after the head."""
    decoy = " ".join(["past the zebra lion the"] * 60)
    documents = {
        "a": "Unique opening words here, then the zebra ran past the lion. Later on. " + decoy
    }
    (row,) = verify_quotes(
        ["Unique opening words here … the zebra rann past the lion"], documents, embedder=None
    )
    assert row.match_kind == "ellipsis" and not row.low_confidence
    assert row.span_text == "Unique opening words here, then the zebra ran past the lion"
