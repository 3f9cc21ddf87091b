"""Quote fidelity: meaning-changing misquotes are refused, harmless slips stay verified."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwire import Context, RagTurn
from groundwire.evaluators import QuoteMatch, QuoteVerification, verify_quotes

HANDBOOK = (
    "A short history.\n\nThe library began in 1887 as a reading room, stocked with four\n"
    "hundred volumes donated by the shipping families of the town. For its first thirty-one "
    "years it was open only two evenings a week. The architect, Margaret Oyelaran, insisted on "
    "tall windows facing the water.\n\nMembers shall not remove books from the reading hall. "
    "Refunds are given within 30 days of purchase. The fee rose 4% to $1,200 in version 2.0 of "
    "the rules, released on 12 March 2024. You may renew a book twice. The colour of the cover "
    "is grey. The system can't handle more than ten users. It doesn't apply to children. "
    "Loans are never extended without a receipt. Set MAX_LOANS to 12 in loans.cfg first."
)
DOCS = {"handbook": HANDBOOK}


def _one(quote: str, **options: object) -> QuoteMatch:
    """The row of one quote against the handbook (no embedder)."""
    (row,) = verify_quotes([quote], DOCS, embedder=None, **options)  # type: ignore[arg-type]
    return row


def _kinds(row: QuoteMatch) -> list[str]:
    """The kinds of the row's meaning changes."""
    return [change.kind for change in row.meaning_changes]


@pytest.mark.parametrize(
    ("quote", "reason"),
    [
        (
            "stocked with four volumes donated by the shipping families",
            "number changed: 'four hundred' -> 'four'",
        ),
        ("Refunds are given within 60 days of purchase", "number changed: '30' -> '60'"),
        ("The fee rose 4% to $1,200 in version 3.0 of the rules", "number changed: '2.0' -> '3.0'"),
        ("The fee rose 5% to $1,200 in version 2.0 of the rules", "number changed: '4%' -> '5%'"),
        (
            "The fee rose 4% to $1,300 in version 2.0 of the rules",
            "number changed: '$1,200' -> '$1,300'",
        ),
        (
            "For its first thirty years it was open only two evenings a week",
            "number changed: 'first thirty-one' -> 'first thirty'",
        ),
        ("The library began in 1878 as a reading room", "number changed: '1887' -> '1878'"),
        (
            "the rules, released on 12 April 2024",
            "number changed: '12 March 2024' -> '12 April 2024'",
        ),
        (
            "it was open only three evenings a week",
            "number changed: 'two' -> 'three'",
        ),
    ],
)
def test_changed_numbers_are_refused_whatever_the_ratio(quote: str, reason: str) -> None:
    """A numeral, number word, date, percentage, money or version that differs is refused."""
    row = _one(quote)
    assert row.match_ratio >= 0.6  # the ratio alone would have verified it
    assert not row.verified and row.low_confidence
    assert _kinds(row) == ["number"]
    assert row.low_confidence_reason == reason


@pytest.mark.parametrize(
    ("quote", "kind", "reason"),
    [
        (
            "Members shall remove books from the reading hall",
            "negation",
            "negation changed: 'shall not' -> 'shall'",
        ),
        (
            "The system can handle more than ten users",
            "negation",
            "negation changed: 'can't' -> 'can'",
        ),
        ("It does apply to children", "negation", "negation changed: 'doesn't' -> 'does'"),
        (
            "Loans are extended without a receipt",
            "negation",
            "negation changed: 'are never' -> 'are'",
        ),
        (
            "Loans are never extended with a receipt",
            "negation",
            "negation changed: 'without' -> 'with'",
        ),
        (
            "Members must not remove books from the reading hall",
            "modality",
            "modality changed: 'shall' -> 'must'",
        ),
        ("You must renew a book twice", "modality", "modality changed: 'may' -> 'must'"),
        (
            "The architect, Elizabeth Oyelaran, insisted on tall windows",
            "entity",
            "entity changed: 'Margaret' -> 'Elizabeth'",
        ),
        (
            "Set MAX_BOOKS to 12 in loans.cfg first",
            "entity",
            "entity changed: 'MAX_LOANS' -> 'MAX_BOOKS'",
        ),
    ],
)
def test_negation_modality_and_entity_changes_are_refused(
    quote: str, kind: str, reason: str
) -> None:
    """A negator on one side only, a flipped modal verb, a different name or identifier."""
    row = _one(quote)
    assert row.match_ratio >= 0.6
    assert not row.verified
    assert _kinds(row) == [kind]
    assert row.low_confidence_reason == reason


@pytest.mark.parametrize(
    "quote",
    [
        "stocked with four hundred volumes donated by the shiping families",  # typo
        "The architect, Margaret Oyelaren, insisted on tall windows",  # typo in a name
        "Members shall not remvoe books from the reading hall",  # transposed letters
        "Refnuds are given within 30 days of purchase",
        "the library  began in 1887\nas a reading room",  # re-spaced
        "THE LIBRARY BEGAN IN 1887 AS A READING ROOM",  # re-cased
        "The color of the cover is gray",  # American spelling
        "The fee rose 4% to $1,200 in version 2.0 of the rules; released on 12 March 2024",
        "The system can’t handle more than ten users",  # curly apostrophe
        "It doesn't apply to children!",  # punctuation
        "Members shall not remove books … within 30 days of purchase",  # ellipsis
        "For its first thirty one years it was open only two evenings a week",  # hyphen dropped
        "it was open only 2 evenings a week",  # same number, in digits
    ],
)
def test_harmless_slips_stay_verified(quote: str) -> None:
    """Typos, spacing, case, spelling, punctuation, quote marks, ellipses change no meaning."""
    row = _one(quote)
    assert row.verified, row.low_confidence_reason
    assert row.meaning_changes == ()
    assert row.low_confidence_reason is None


def test_edits_show_what_changed_with_offsets_in_both_texts() -> None:
    """Each edit names its kind and both sides; offsets point at them in quote and document."""
    quote = "The archtect, Margaret Oyelaran, insisted on wide windows facing the water"
    row = _one(quote)
    assert [(e.kind, e.quote_text, e.source_text) for e in row.edits] == [
        ("typo", "archtect", "architect"),
        ("changed", "wide", "tall"),
    ]
    assert row.verified  # a changed adjective is a slip, not a changed fact
    for edit in row.edits:
        assert quote[edit.quote_start : edit.quote_end] == edit.quote_text
        assert HANDBOOK[edit.source_start : edit.source_end] == edit.source_text
    dropped = _one("stocked with four volumes donated by the shipping families")
    (edit,) = dropped.edits
    assert (edit.kind, edit.quote_text, edit.source_text) == ("dropped", "", "hundred")
    (change,) = dropped.meaning_changes
    assert HANDBOOK[change.source_start : change.source_end] == "four\nhundred"
    assert change.quote_text == "four"


def test_meaning_check_off_restores_ratio_only_verdicts() -> None:
    """meaning_check=False: the misquotes are verified again, with no edits computed."""
    quotes = [
        "stocked with four volumes donated by the shipping families",
        "Members shall remove books from the reading hall",
        "You must renew a book twice",
    ]
    rows = verify_quotes(quotes, DOCS, embedder=None, meaning_check=False)
    assert all(row.verified for row in rows)
    assert all(row.edits == () and row.low_confidence_reason is None for row in rows)
    with pytest.raises(TypeError, match="meaning_check must be a bool"):
        verify_quotes(quotes, DOCS, embedder=None, meaning_check="no")  # type: ignore[arg-type]


def test_low_ratio_reason_is_given_too() -> None:
    """An invented quote is not verified and says why (the ratio, against the threshold)."""
    row = _one("profits will double next year for every member of the board")
    assert not row.verified
    assert row.low_confidence_reason is not None
    assert row.low_confidence_reason.startswith("match ratio ")
    assert "is below 0.6" in row.low_confidence_reason


def test_verbatim_occurrence_is_preferred_over_a_recased_duplicate() -> None:
    """The same words in two documents: the quote is placed where it stands verbatim."""
    docs = {
        "shouting": "NOTICE: THE LIBRARY NO LONGER CHARGES LATE FEES.",
        "handbook": "Since 2020 the library no longer charges late fees.",
    }
    (row,) = verify_quotes(["the library no longer charges late fees"], docs, embedder=None)
    assert (row.source_doc, row.span_text) == (
        "handbook",
        "the library no longer charges late fees",
    )
    (first,) = verify_quotes(["THE LIBRARY NO LONGER CHARGES"], docs, embedder=None)
    assert first.source_doc == "shouting"
    (neither,) = verify_quotes(["The Library No Longer Charges"], docs, embedder=None)
    assert neither.source_doc == "shouting"  # no verbatim copy: the first normalised hit


@pytest.mark.parametrize("form", ["NFD", "NFC"])
def test_unicode_forms_match_with_offsets_in_the_original(form: str) -> None:
    """An NFD quote is found in an NFC source and vice versa; offsets are the original's."""
    composed = "On Fridays the café serves crème brûlée to every reader."
    source = unicodedata.normalize(form, composed)
    other = "NFC" if form == "NFD" else "NFD"
    quote = unicodedata.normalize(other, "the café serves crème brûlée")
    (row,) = verify_quotes([quote], {"menu": source}, embedder=None)
    assert row.match_kind == "exact" and row.match_ratio == 1.0 and row.verified
    assert row.doc_start is not None and row.doc_end is not None
    assert source[row.doc_start : row.doc_end] == row.span_text
    assert unicodedata.normalize("NFC", row.span_text) == unicodedata.normalize("NFC", quote)
    typo = unicodedata.normalize(other, "the café serves crème brulée to every raeder")
    (fuzzy,) = verify_quotes([typo], {"menu": source}, embedder=None)
    assert fuzzy.verified and fuzzy.match_kind == "fuzzy"
    for edit in fuzzy.edits:
        assert typo[edit.quote_start : edit.quote_end] == edit.quote_text
        assert source[edit.source_start : edit.source_end] == edit.source_text


def test_rows_with_edits_are_json_serialisable() -> None:
    """to_dict() gives lists of plain dicts for edits and meaning changes."""
    row = _one("Refunds are given within 60 days of purchase")
    data = json.loads(json.dumps(row.to_dict()))
    assert data["edits"] == [
        {
            "kind": "changed",
            "quote_text": "60",
            "source_text": "30",
            "quote_start": row.edits[0].quote_start,
            "quote_end": row.edits[0].quote_end,
            "source_start": row.edits[0].source_start,
            "source_end": row.edits[0].source_end,
        }
    ]
    assert [change["kind"] for change in data["meaning_changes"]] == ["number"]
    assert data["low_confidence_reason"] == "number changed: '30' -> '60'"


def test_evaluator_refuses_misquotes_and_says_what_changed() -> None:
    """The per-turn score counts a misquote as unverified and names the change; the switch."""
    turn = RagTurn(
        query="How old is the library?",
        contexts=[Context(text=HANDBOOK, id="handbook")],
        answer=(
            "It “began in 1887 as a reading room” with “four volumes donated by the shipping "
            "families”."
        ),
    )
    score = QuoteVerification(embedder=None).evaluate(turn)
    assert score.value == 0.5 and score.label == "some_unverified"
    assert score.explanation == (
        "1 of 2 quotes verified in the contexts; misquoted: “four volumes donated by the "
        "shipping families” (number changed: 'four hundred' -> 'four')"
    )
    row = score.details["quotes"][1]
    assert row["meaning_changes"][0]["kind"] == "number"
    json.dumps(score.details)
    lenient = QuoteVerification(embedder=None, meaning_check=False).evaluate(turn)
    assert lenient.value == 1.0


_WORDS_OF_HANDBOOK = HANDBOOK.split()


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, len(_WORDS_OF_HANDBOOK) - 12),
    st.integers(6, 12),
    st.sampled_from(["upper", "lower", "keep"]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(-1, 11),
)
def test_harmless_rewrites_of_any_passage_never_change_meaning(
    first: int, size: int, case: str, respace: bool, curly: bool, depunctuate: bool, typo: int
) -> None:
    """Property: any passage re-cased, re-spaced, with curly apostrophes, without trailing
    punctuation or with two letters of a long word swapped is verified with no meaning change."""
    words = _WORDS_OF_HANDBOOK[first : first + size]
    if 0 <= typo < len(words) and words[typo].isalpha() and len(words[typo]) >= 6:
        word = words[typo]
        words = [*words[:typo], word[0] + word[2] + word[1] + word[3:], *words[typo + 1 :]]
    quote = " ".join(words)
    quote = quote.upper() if case == "upper" else quote.lower() if case == "lower" else quote
    if respace:
        quote = quote.replace(" ", "  \n ", 2)
    if curly:
        quote = quote.replace("'", "\u2019")
    if depunctuate:
        quote = re.sub(r"[,;.!?](?=\s|$)", "", quote)
    row = _one(quote)
    assert row.meaning_changes == (), (quote, row.low_confidence_reason)
    assert row.verified, (quote, row.low_confidence_reason)


_PARKS_QUOTE = "the council approved fiv new parks in the city centre last year"
_PARKS_A = "The council approved four new parks in the city centre last year."


@pytest.mark.parametrize(
    ("other", "expected"),
    [
        # within 0.05 of the best ratio and no meaning change: the runner-up wins
        (
            "The council approved five new parks in the city center last year.",
            ("B", 0.905, False, None),
        ),
        # further than 0.05 below: the best span stays, with its change
        (
            "The council approved five new parks in the city center at last year.",
            ("A", 0.939, True, "number changed: 'four' -> 'fiv'"),
        ),
    ],
)
def test_a_close_runner_up_that_changes_no_meaning_replaces_a_misquoting_best_span(
    other: str, expected: tuple[str, float, bool, str | None]
) -> None:
    """When the best span would change the quote's meaning, a runner-up span whose ratio is
    within 0.05 of it and that changes nothing is chosen instead; a further one is not."""
    (row,) = verify_quotes([_PARKS_QUOTE], {"A": _PARKS_A, "B": other}, embedder=None)
    got = (row.source_doc, round(row.match_ratio, 3), row.low_confidence)
    assert (*got, row.low_confidence_reason) == expected
    (plain,) = verify_quotes(
        [_PARKS_QUOTE], {"A": _PARKS_A, "B": other}, embedder=None, meaning_check=False
    )
    assert (plain.source_doc, plain.low_confidence) == ("A", False)


def test_reasons_are_exact_and_joined() -> None:
    """The reason gives the ratio to two places against the threshold, or every change, joined
    with "; "."""
    parks = {"A": _PARKS_A, "B": "The council approved five new parks in the city centre."}
    (invented,) = verify_quotes(
        ["profits will double next year for every member of the board"], parks, embedder=None
    )
    assert invented.low_confidence_reason == "match ratio 0.26 is below 0.6"
    (changed,) = verify_quotes(
        ["the council did not approve 7 new parks in the city"], parks, embedder=None
    )
    assert changed.low_confidence_reason == (
        "number changed: 'four' -> '7'; negation changed: 'approved four' -> 'did not approve 7'"
    )


def test_cannot_negates_can() -> None:
    """ "cannot" where the source says "can" is a negation change (and the same modal verb)."""
    (row,) = verify_quotes(
        ["members cannot remove books from the reading hall"],
        ["Members can remove books from the reading hall."],
        embedder=None,
    )
    assert row.low_confidence_reason == "negation changed: 'can' -> 'cannot'"
