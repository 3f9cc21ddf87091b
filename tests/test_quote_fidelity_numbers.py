"""Quote fidelity, numbers: a quote that changes a number is flagged, one that writes it another
way ("three" for "3", "4 per cent" for "4%", "$5" for "five dollars") is not."""

from __future__ import annotations

import pytest

from groundwire.evaluators import verify_quotes
from groundwire.evaluators.quote_verification._changes import Fidelity
from groundwire.evaluators.quote_verification._fidelity import compare
from groundwire.evaluators.quote_verification._normalise import fold, normalise


def _compare(quote: str, source: str) -> Fidelity:
    """The quote compared with the whole of `source` (as the located span)."""
    norm = normalise(source)
    return compare(quote, fold(quote), source, norm, 0, len(norm.text))


def _reasons(quote: str, source: str) -> list[str]:
    """The meaning changes of the quote against the source, described."""
    return [change.describe() for change in _compare(quote, source).changes]


@pytest.mark.parametrize(
    ("quote", "source", "reasons"),
    [
        ("the fee is 12% a year", "the fee is 21% a year", ["number changed: '21%' -> '12%'"]),
        (
            "the fee is 12 per cent a year",
            "the fee is 21 per cent a year",
            ["number changed: '21 per cent' -> '12 per cent'"],
        ),
        ("there were three cats", "there were 4 cats", ["number changed: '4' -> 'three'"]),
        (
            "there were four hundred cats",
            "there were 40 cats",
            ["number changed: '40' -> 'four hundred'"],
        ),
        (
            "one hundred and five members",
            "one hundred and fifty members",
            ["number changed: 'one hundred and fifty' -> 'one hundred and five'"],
        ),
        (
            "two thousand three hundred members",
            "2,030 members",
            ["number changed: '2,030' -> 'two thousand three hundred'"],
        ),
        (
            "two million people",
            "1,000,000 people",
            ["number changed: '1,000,000' -> 'two million'"],
        ),
        ("the first member", "the 2nd member", ["number changed: '2nd' -> 'first'"]),
        (
            "it costs five dollars",
            "it costs €5",
            ["number changed: '€5' -> 'five dollars'"],
        ),
        ("fifty cents", "50 dollars", ["number changed: '50 dollars' -> 'fifty cents'"]),
        (
            "the fee is twelve cent a year",
            "the fee is 12% a year",
            ["number changed: '12%' -> 'twelve cent'"],
        ),
        (
            "the fee is twelve percent a year",
            "the fee is twelve dollars a year",
            ["number changed: 'twelve dollars' -> 'twelve percent'"],
        ),
        (
            "on 12 May 2024 they",
            "on 12 June 2024 they",
            ["number changed: '12 June 2024' -> '12 May 2024'"],
        ),
        ("in May 2024 they", "in June 2024 they", ["number changed: 'June 2024' -> 'May 2024'"]),
        ("in version v2.1 today", "in version 2.2 today", ["number changed: '2.2' -> 'v2.1'"]),
        ("it had 1,20 rooms", "it had 120 rooms", ["number changed: '120' -> '1,20'"]),
        (
            "thirty-one years",
            "thirty-two years",
            ["number changed: 'thirty-two' -> 'thirty-one'"],
        ),
        (
            "there were eleven people in all",
            "there were five and six people in all",
            ["number changed: 'five and six' -> 'eleven'"],
        ),
        ("a 5kg bag", "a 5lb bag", ["number changed: '5lb' -> '5kg'"]),
        ("at 10:30 today", "at 10:45 today", ["number changed: '10:45' -> '10:30'"]),
        ("a half of them", "0 of them", ["number changed: '0' -> 'half'"]),
        # a typo of a number word is read as that word, beside a changed one
        (
            "stocked with fuor thousand volumes",
            "stocked with four hundred volumes",
            ["number changed: 'four hundred' -> 'fuor thousand'"],
        ),
        # a capitalised month is a date's part, a lower-case "march" a verb
        ("in June the fee", "in July the fee", ["number changed: 'July' -> 'June'"]),
        ("we march 5 miles", "we march 6 miles", ["number changed: '6' -> '5'"]),
        (
            "the twenty first member",
            "the 1st member",
            ["number changed: '1st' -> 'twenty first'"],
        ),
    ],
)
def test_a_changed_number_is_flagged_with_both_phrases(
    quote: str, source: str, reasons: list[str]
) -> None:
    """A different value, unit, currency, percentage, month or version is a number change,
    described with the whole number phrase on both sides."""
    assert _reasons(quote, source) == reasons


@pytest.mark.parametrize(
    ("quote", "source"),
    [
        ("there were three cats", "there were 3 cats"),
        ("there were four hundred cats", "there were 400 cats"),
        ("one hundred and five members", "105 members"),
        ("three thousand and two people", "3002 people"),
        ("two thousand three hundred members", "2,300 members"),
        ("one million people", "1,000,000 people"),
        ("a dozen eggs", "12 eggs"),
        ("the third member", "the 3rd member"),
        ("the hundredth member", "the 100th member"),
        ("the two hundredth member", "the 200th member"),
        ("the twenty first member", "the 21st member"),
        ("the thirtieth member", "the 30th member"),
        ("the fee is twelve per cent a year", "the fee is 12% a year"),
        ("the fee is twelve percent a year", "the fee is 12 pct a year"),
        ("it costs five dollars", "it costs $5"),
        ("it costs five euros", "it costs €5"),
        ("it costs 5 pounds", "it costs £5"),
        ("it costs 5 yen", "it costs ¥5"),
        ("fifty cents", "50 cents"),
        ("on 12 Mar 2024 they", "on 12 March 2024 they"),
        ("in version v2.1 today", "in version 2.1 today"),
        ("it had 1,200 rooms", "it had 1200 rooms"),
        ("thirty-one years", "31 years"),
        ("on March twelve they", "on March 12 they"),
        ("the two thousandth visitor", "the 2000th visitor"),
        ("the three millionth visitor", "the 3,000,000th visitor"),
        ("three hundred thousand people", "300,000 people"),
        ("a hundred people", "100 people"),
        ("a thousand people", "1,000 people"),
        ("one million two hundred thousand people", "1,200,000 people"),
        ("a half of them", "0.5 of them"),
    ],
)
def test_the_same_number_written_another_way_changes_nothing(quote: str, source: str) -> None:
    """Digits for words, a symbol for a currency or percent word, thousands separators, an
    ordinal suffix, a month's abbreviation or a version's v: the same value, no change."""
    fidelity = _compare(quote, source)
    assert fidelity.edits  # the words differ...
    assert fidelity.changes == ()  # ...but not the number


def test_a_hyphenated_number_reads_as_its_words() -> None:
    """ "thirty-one" is the words "thirty one": no edit at all, while "well-known" is one word."""
    assert _compare("thirty one years", "thirty-one years") == Fidelity()
    (edit,) = _compare("a well known man", "a well-known man").edits
    assert (edit.kind, edit.quote_text, edit.source_text) == ("changed", "well known", "well-known")


def test_a_month_named_may_is_a_date_not_a_modal_verb() -> None:
    """ "May" of a date that changes is a number change only; "may" the verb is a modal."""
    assert _reasons("on 3 May the", "on 3 June the") == ["number changed: '3 June' -> '3 May'"]
    assert _reasons("on 3 May", "on 3 June") == ["number changed: '3 June' -> '3 May'"]
    assert _reasons("12 May was the day", "12 June was the day") == [
        "number changed: '12 June' -> '12 May'"
    ]
    assert _reasons("May we go home?", "Must we go home?") == ["modality changed: 'Must' -> 'May'"]
    assert _reasons("you may go now", "you must go now") == ["modality changed: 'must' -> 'may'"]


def test_a_typo_after_a_changed_word_is_read_as_its_own_source_word() -> None:
    """In a run of replaced words, a slip in the second ("sevn") is read as the source word it
    stands for, at its own place: the number phrase is "twelve seven", not "seven"."""
    assert _reasons("they were twelve sevn times", "they were eleven seven times") == [
        "number changed: 'eleven seven' -> 'twelve sevn'"
    ]


def test_per_cent_without_a_number_is_no_number() -> None:
    """ "per cent" with no number before it joins nothing: changing a word beside it changes
    no number."""
    assert _reasons("figures are given in per cent", "figures are given in pro cent") == []


def test_may_as_the_last_or_first_word_looks_only_at_the_neighbour_it_has() -> None:
    """ "May" closing or opening the text, next to a change but to no numeral: only the one
    neighbour there is is read, and an edit beside it changes no meaning."""
    assert _reasons("it was May", "it is May") == []
    assert _reasons("May was it", "May is it") == []


def test_swapped_numbers_are_both_flagged() -> None:
    """Two numbers that trade places each change: "five apples and six pears"."""
    assert _reasons("five apples and six pears", "six apples and five pears") == [
        "number changed: 'six' -> 'five'",
        "number changed: 'five' -> 'six'",
    ]


def test_verify_quotes_flags_a_changed_percentage_and_keeps_a_respelled_one() -> None:
    """End to end: "21%" for "12%" is refused; "twelve per cent" for "12%" is verified."""
    docs = {"fees": "Since March the annual fee has been 12% of the loan, paid in advance."}
    changed, respelled = verify_quotes(
        [
            "the annual fee has been 21% of the loan, paid in advance",
            "the annual fee has been twelve per cent of the loan, paid in advance",
        ],
        docs,
        embedder=None,
    )
    assert not changed.verified
    assert changed.low_confidence_reason == "number changed: '12%' -> '21%'"
    (change,) = changed.meaning_changes
    assert docs["fees"][change.source_start : change.source_end] == "12%"
    assert respelled.verified, respelled.low_confidence_reason
    assert respelled.meaning_changes == ()


@pytest.mark.parametrize(
    ("quote", "source", "reasons"),
    [
        # "and" continues a number after a scale word and before a number word only
        ("a fee of twelve per cent", "a fee of 12%", []),
        ("thousand and one nights", "1001 nights", []),
        ("the count was one hundred and five", "the count was 105", []),
        ("we counted one hundred and", "we counted one hundred", []),
        (
            "we counted two hundred and then more",
            "we counted one hundred and then more",
            ["number changed: 'one hundred' -> 'two hundred'"],
        ),
        # "per" continues a number only as "per cent"
        ("they paid 12 per year", "they paid 21 per year", ["number changed: '21' -> '12'"]),
        (
            "the fee rose 4 per cent",
            "the fee rose 4 per",
            ["number changed: 'per' -> '4 per cent'"],
        ),
    ],
)
def test_and_and_per_continue_a_number_only_where_they_belong_to_it(
    quote: str, source: str, reasons: list[str]
) -> None:
    """ "one hundred and five" is one number, "and then" is not part of one; "per cent" is a
    percentage, "per year" is not; either word at the very end of a text ends the number."""
    assert _reasons(quote, source) == reasons


@pytest.mark.parametrize(
    ("quote", "source", "reasons"),
    [
        (
            "5 big dogs ran 7 miles",
            "6 big cats ran 8 miles",
            ["number changed: '6' -> '5'", "number changed: '8' -> '7'"],
        ),
        ("in 2020 the fee was 12%", "in 2020 the fee was 21%", ["number changed: '21%' -> '12%'"]),
        ("5 to 7", "6 to 7", ["number changed: '6' -> '5'"]),
        (
            "5 of one hundred pages",
            "5 of one thousand pages",
            ["number changed: 'one thousand' -> 'one hundred'"],
        ),
        # a currency word before an amount is not part of it
        (
            "the fee in dollars 6 today",
            "the fee in dollars 5 today",
            ["number changed: '5' -> '6'"],
        ),
    ],
)
def test_each_number_is_judged_where_it_stands(quote: str, source: str, reasons: list[str]) -> None:
    """A change is reported once, at the number it touches: a number two words from another
    difference, or earlier in the text, is not drawn into it."""
    assert _reasons(quote, source) == reasons


def test_a_currency_word_without_a_number_is_a_plain_edit() -> None:
    """ "dollars" for "euros" with no amount: one changed word, read without error at the end."""
    (edit,) = _compare("they paid in dollars", "they paid in euros").edits
    assert (edit.kind, edit.quote_text, edit.source_text) == ("changed", "dollars", "euros")
