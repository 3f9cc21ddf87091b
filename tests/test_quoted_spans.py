"""The quote finder (both styles), `quoted_spans_alignment` and the `quoted_spans` evaluator."""

from __future__ import annotations

import itertools
import re

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import groundwire
from groundwire import RagTurn, Score
from groundwire.evaluators import QuotedSpans, find_quotes, quoted_spans_alignment
from groundwire.evaluators.quoted_spans import Quote, match_spans


def texts(text: str, **options: object) -> list[str]:
    """The quotes' texts, after checking every offset points at its text."""
    quotes = find_quotes(text, **options)  # type: ignore[arg-type]
    for quote in quotes:
        assert text[quote.start : quote.end] == quote.text
    return [quote.text for quote in quotes]


# --- find_quotes, typographic style ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('He said "the sky is blue" today.', ["the sky is blue"]),
        ("He said “the sky is blue” today.", ["the sky is blue"]),
        ("He said ‘the sky is blue’ today.", ["the sky is blue"]),
        ("Il a dit « le ciel est bleu » hier.", ["le ciel est bleu"]),
        ("Il a dit «le ciel est bleu» hier.", ["le ciel est bleu"]),
        ("Il a dit ‹ le ciel est bleu › hier.", ["le ciel est bleu"]),
        ("Er sagte »der Himmel ist blau« heute.", ["der Himmel ist blau"]),
        ("Er sagte ›der Himmel ist blau‹ heute.", ["der Himmel ist blau"]),
        ("Er sagte „der Himmel ist blau“ heute.", ["der Himmel ist blau"]),
        ("Powiedział „niebo jest niebieskie” dziś.", ["niebo jest niebieskie"]),
        ("彼は「空は青い」と言った。", ["空は青い"]),
        ("彼は『空は青い』と言った。", ["空は青い"]),
    ],
)
def test_each_quote_kind_is_found(text: str, expected: list[str]) -> None:
    """Every supported pair of quotation marks yields its inner text, stripped."""
    assert texts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "It's O'Neil's book.",
        "It’s O’Neil’s book, isn’t it?",
        "the students’ books and ’90s music",
        'a 5" screen and a 7" tablet',
        "Home » Products » Phones",
        "`code` and ´accent´ and 'single straight quotes'",
    ],
)
def test_apostrophes_and_lookalikes_never_quote(text: str) -> None:
    """Apostrophes in words, inch marks, breadcrumbs, backticks, straight singles: never quotes."""
    assert texts(text) == []


def test_apostrophe_inside_a_quote_does_not_close_it() -> None:
    """‘O’Neil’s idea’ is one quote: the apostrophes between letters neither open nor close."""
    assert texts("She called it ‘O’Neil’s idea’ and “it’s fine”.") == ["O’Neil’s idea", "it’s fine"]


def test_nested_quotes_report_the_outermost() -> None:
    """A quote inside a quote stays part of the outer quote's text and is not reported alone."""
    text = "He wrote “she said ‘never again’ twice” and «il dit “oui”»."
    assert texts(text) == ["she said ‘never again’ twice", "il dit “oui”"]


def test_unclosed_opener_is_ignored_and_inner_quotes_survive() -> None:
    """An opener that is never closed is dropped; complete quotes after or inside it still count."""
    assert texts("He said “hello there and “good bye now” ok") == ["good bye now"]
    assert texts("“unclosed ‘inner quote’ here") == ["inner quote"]
    assert texts("a stray closer” and “a real one”") == ["a real one"]


def test_closer_drops_unclosed_inner_openers() -> None:
    """A closer matching an outer opener ends it; openers still open inside it are discarded."""
    assert texts("“he said ‘no way” and then ’ went") == ["he said ‘no way"]


def test_quotes_do_not_cross_a_blank_line() -> None:
    """A paragraph break ends every open quote; a single line break does not."""
    assert texts("“first line\nsecond line”") == ["first line\nsecond line"]
    assert texts("“first paragraph\n \nsecond” and “ok”") == ["ok"]


def test_empty_quotes_and_min_len_in_words() -> None:
    """min_len counts words; empty quotes appear only with min_len=0; CJK characters count each."""
    text = "“” and “one” and “two words” and 「空は青い」"
    assert texts(text, min_len=0) == ["", "one", "two words", "空は青い"]
    assert texts(text) == ["one", "two words", "空は青い"]
    assert texts(text, min_len=2) == ["two words", "空は青い"]
    assert texts(text, min_len=4) == ["空は青い"]
    assert texts(text, min_len=5) == []


def test_offsets_point_into_the_text() -> None:
    """Quote offsets exclude the marks and the surrounding whitespace."""
    assert find_quotes("x “  a b  ” y") == [Quote("a b", 5, 8)]


_MARKS = ['"', "“", "”", "‘", "’", "„", "«", "»", "‹", "›", "「", "」", "『", "』", "'", "`"]
_PIECES = st.sampled_from([*_MARKS, "it’s", "O’Neil", "a", "b", " ", "  ", "\n", "\n\n", "x’y"])
_TEXT = st.lists(_PIECES, max_size=30).map("".join)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=_TEXT)
def test_typographic_quotes_are_ordered_disjoint_and_stripped(text: str) -> None:
    """On any text, quotes are in order, never overlap, and are stripped slices of the text."""
    quotes = find_quotes(text, min_len=0)
    for quote in quotes:
        assert text[quote.start : quote.end] == quote.text == quote.text.strip()
    for before, after in itertools.pairwise(quotes):
        assert before.end < after.start


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=_TEXT)
def test_word_internal_apostrophes_never_change_the_quotes(text: str) -> None:
    """Replacing every ’ or ‘ between two letters by a plain letter leaves the quotes unchanged."""
    plain = re.sub(r"(?<=[^\W_])[’‘](?=[^\W_])", "q", text)
    assert [q[1:] for q in find_quotes(text, min_len=0)] == [
        q[1:] for q in find_quotes(plain, min_len=0)
    ]


# --- find_quotes, Ragas style ------------------------------------------------------------------


def test_ragas_style_reproduces_the_released_pattern() -> None:
    """Ragas style: ", ', ` and ´ open and close each other; curly marks are not quotes at all."""
    assert texts("“curly quotes here” ‘single ones too’", style="ragas") == []
    assert texts('`mixed" and ´acute´', style="ragas") == ["mixed", "acute"]
    assert texts("He said \"a b c\" and 'd e f'", style="ragas") == ["a b c", "d e f"]


def test_ragas_style_apostrophes_and_newlines_break_quotes() -> None:
    """Ragas style: an apostrophe opens a quote, and a quote cannot span a line break."""
    assert texts('it\'s "a b c" ok', style="ragas", min_len=0) == ["s"]
    assert texts('"no\nnewline" "x"', style="ragas", min_len=0) == [""]


def test_find_quotes_rejects_bad_arguments() -> None:
    """A non-string text, an unknown style or a bad min_len raise, naming the argument."""
    with pytest.raises(TypeError, match="text must be a str, got NoneType"):
        find_quotes(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^text must be a str, got int$"):
        find_quotes(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="style must be one of"):
        find_quotes("x", style="smart")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_len must be >= 0"):
        find_quotes("x", min_len=-1)
    with pytest.raises(TypeError, match="min_len must be an int"):
        find_quotes("x", min_len=1.5)  # type: ignore[arg-type]


# --- quoted_spans_alignment --------------------------------------------------------------------

SOURCES = ["The committee found that the budget was balanced.", "Costs rose by ten percent."]


def test_alignment_counts_matched_over_total() -> None:
    """The dict holds matched/total and both counts as floats, Ragas' keys in Ragas' order."""
    answers = ['It said "the budget was balanced" and "costs fell by half".', "No quotes."]
    result = quoted_spans_alignment(answers, [SOURCES, SOURCES])
    assert result == {"citation_alignment_quoted_spans": 0.5, "matched": 1.0, "total": 2.0}
    assert list(result) == ["citation_alignment_quoted_spans", "matched", "total"]


def test_alignment_without_spans_is_zero() -> None:
    """No qualifying span anywhere gives 0.0 with zero counts (Ragas' definition)."""
    expected = {"citation_alignment_quoted_spans": 0.0, "matched": 0.0, "total": 0.0}
    assert quoted_spans_alignment([], []) == expected
    assert quoted_spans_alignment(["", 'a "two words" b'], [[], SOURCES]) == expected


def test_alignment_casefold_controls_case_and_whitespace() -> None:
    """casefold lower-cases and collapses whitespace; without it Ragas style compares raw text."""
    answers = ['"The  BUDGET was \t balanced"']
    assert quoted_spans_alignment(answers, [SOURCES])["matched"] == 1.0
    assert quoted_spans_alignment(answers, [SOURCES], casefold=False)["matched"] == 0.0


def test_typographic_alignment_finds_curly_quotes_and_folds_apostrophes() -> None:
    """Typographic style sees curly quotes Ragas misses, and ’ matches ' in the source."""
    answers = ["It said “the committee’s budget was balanced”."]
    sources = [["In short, the committee's budget was balanced."]]
    assert quoted_spans_alignment(answers, sources)["total"] == 0.0
    result = quoted_spans_alignment(answers, sources, quote_style="typographic")
    assert result == {"citation_alignment_quoted_spans": 1.0, "matched": 1.0, "total": 1.0}


def test_typographic_alignment_never_matches_across_two_sources() -> None:
    """Ragas joins sources with a space so a span may straddle two; typographic style does not."""
    answers = ['"was balanced. Costs rose"']
    sources = [["the budget was balanced.", "Costs rose by ten percent."]]
    assert quoted_spans_alignment(answers, sources)["matched"] == 1.0
    assert quoted_spans_alignment(answers, sources, quote_style="typographic")["matched"] == 0.0


def test_typographic_alignment_ignores_empty_quotes() -> None:
    """Ragas style counts an empty quote as an unmatched span at min_len=0; typographic skips it."""
    answers = ['He said "" and “”.']
    assert quoted_spans_alignment(answers, [SOURCES], min_len=0)["total"] == 1.0
    assert quoted_spans_alignment(answers, [SOURCES], min_len=0, quote_style="typographic") == {
        "citation_alignment_quoted_spans": 0.0,
        "matched": 0.0,
        "total": 0.0,
    }


def test_alignment_accepts_tuples_and_other_sized_sequences() -> None:
    """Any sized, iterable container works for answers, sources and each source list."""
    result = quoted_spans_alignment(('"costs rose by"',), (tuple(SOURCES),))
    assert result["matched"] == 1.0
    arrays = quoted_spans_alignment(numpy.array(['"costs rose by"']), [numpy.array(SOURCES)])
    assert arrays == result


@pytest.mark.parametrize(
    ("answers", "sources", "error", "message"),
    [
        ('"a b c"', [SOURCES], TypeError, r"answers must be a sequence .*got str \(wrap"),
        (['"a b c"'], SOURCES[:1], TypeError, r"sources\[0\] must be a sequence .*got str"),
        ([None], [SOURCES], TypeError, r"answers\[0\] must be a str, got NoneType"),
        (["x", b"y"], [[], []], TypeError, r"answers\[1\] must be a str, got bytes"),
        (["x"], [["ok", 3]], TypeError, r"sources\[0\]\[1\] must be a str, got int"),
        ((a for a in ["x"]), [[]], TypeError, "answers must be a sequence"),
        (["x", "y"], [[]], ValueError, "got 2 answers and 1 source lists"),
        (5, [], TypeError, r"^answers must be a sequence such as a list, got int$"),
        ([], 7, TypeError, r"^sources must be a sequence such as a list, got int$"),
    ],
)
def test_alignment_rejects_malformed_input(
    answers: object, sources: object, error: type[Exception], message: str
) -> None:
    """Inputs Ragas would mis-score or reject obscurely raise an error naming the bad item."""
    with pytest.raises(error, match=message):
        quoted_spans_alignment(answers, sources)  # type: ignore[arg-type]


def test_alignment_rejects_bad_options() -> None:
    """A negative or non-integer min_len and an unknown quote_style raise at once."""
    with pytest.raises(ValueError, match="min_len must be >= 0, got -1"):
        quoted_spans_alignment([], [], min_len=-1)
    with pytest.raises(TypeError, match="min_len must be an int, got float"):
        quoted_spans_alignment([], [], min_len=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"quote_style must be one of \['ragas', 'typographic'\]"):
        quoted_spans_alignment([], [], quote_style="curly")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^normalize_unicode must be a bool, got str$"):
        quoted_spans_alignment([], [], normalize_unicode="yes")  # type: ignore[arg-type]


# --- QuotedSpans evaluator ---------------------------------------------------------------------


def turn(answer: str, contexts: list[str] | None = None) -> RagTurn:
    """A turn over SOURCES (or the given contexts)."""
    return RagTurn(
        query="What did the committee find?", contexts=contexts or SOURCES, answer=answer
    )


def test_evaluator_scores_matched_over_total_with_details() -> None:
    """Value is matched/total; details list each span, its offsets, match and context index."""
    answer = (
        "It found “the budget was balanced” while «costs rose by ten percent» and “all was lost”."
    )
    score = QuotedSpans().evaluate(turn(answer))
    assert score.name == "quoted_spans"
    assert score.value == pytest.approx(2 / 3)
    assert score.label == "some_unmatched"
    assert score.explanation == "2 of 3 quoted spans of at least 3 words occur in the contexts."
    details = dict(score.details)
    spans = details.pop("spans")
    assert details == {"quote_style": "typographic", "matched": 2, "total": 3}
    assert [(s["text"], s["matched"], s["context_index"]) for s in spans] == [
        ("the budget was balanced", True, 0),
        ("costs rose by ten percent", True, 1),
        ("all was lost", False, None),
    ]
    for span in spans:
        assert answer[span["start"] : span["end"]] == span["text"]
    assert Score.from_json(score.to_json()) == score


@pytest.mark.parametrize(
    ("answer", "value", "label"),
    [
        ("“the budget was balanced”", 1.0, "all_matched"),
        ("“the budget was unbalanced”", 0.0, "none_matched"),
        ("“the budget was balanced” and “it was not”", 0.5, "some_unmatched"),
    ],
)
def test_evaluator_labels(answer: str, value: float, label: str) -> None:
    """The label says whether all, some or none of the spans matched."""
    score = QuotedSpans().evaluate(turn(answer))
    assert (score.value, score.label) == (value, label)


@pytest.mark.parametrize(
    "answer",
    ["", "No quotes at all.", "Too “short” to count", "It’s O’Neil’s “two words”"],
)
def test_evaluator_without_qualifying_quotes_is_not_applicable(answer: str) -> None:
    """An answer with no quote of min_len words scores None with label no_quotes, not 0.0."""
    score = QuotedSpans().evaluate(turn(answer))
    assert score.value is None
    assert score.label == "no_quotes"
    assert not score.applicable and score.ok


def test_evaluator_with_no_contexts_matches_nothing() -> None:
    """Quotes in a turn with no contexts are all unmatched: 0.0, and the explanation says so."""
    score = QuotedSpans().evaluate(RagTurn(query="q", answer="“the budget was balanced”"))
    assert (score.value, score.label) == (0.0, "none_matched")
    assert score.explanation is not None and "the turn has none" in score.explanation


def test_evaluator_options_change_the_score() -> None:
    """min_len, casefold and quote_style are honoured."""
    answer = 'He said "The Budget" and “THE BUDGET WAS BALANCED”.'
    assert QuotedSpans().evaluate(turn(answer)).value == 1.0
    assert QuotedSpans(casefold=False).evaluate(turn(answer)).value == 0.0
    assert QuotedSpans(min_len=2).evaluate(turn(answer)).details["total"] == 2
    ragas = QuotedSpans(quote_style="ragas", min_len=2).evaluate(turn(answer))
    assert [s["text"] for s in ragas.details["spans"]] == ["The Budget"]


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"casefold": "yes"}, TypeError, "quoted_spans: casefold must be a bool, got str"),
        ({"min_len": -1}, ValueError, "quoted_spans: min_len must be >= 0, got -1"),
        ({"min_len": True}, TypeError, "quoted_spans: min_len must be an int, got bool"),
        ({"min_len": "3"}, TypeError, "quoted_spans: min_len must be an int, got str"),
        ({"quote_style": "smart"}, ValueError, "quoted_spans: quote_style must be one of"),
        ({"min_words": 3}, TypeError, "min_words"),
    ],
)
def test_evaluator_rejects_bad_options(
    options: dict[str, object], error: type[Exception], message: str
) -> None:
    """Bad constructor options raise at once, naming the option."""
    with pytest.raises(error, match=message):
        QuotedSpans(**options)  # type: ignore[arg-type]


def test_evaluator_is_registered_and_runs_through_evaluate() -> None:
    """The registry name quoted_spans builds the evaluator, options included, for evaluate()."""
    evaluator = groundwire.get_evaluator("quoted_spans", min_len=2)
    assert isinstance(evaluator, QuotedSpans) and evaluator.min_len == 2
    assert repr(evaluator) == "QuotedSpans(casefold=True, min_len=2, quote_style='typographic')"
    scores = groundwire.evaluate(turn("“budget was balanced”"), ["quoted_spans"])
    assert scores["quoted_spans"].value == 1.0


def test_evaluator_messages_are_exact() -> None:
    """The not-applicable and no-contexts explanations, the style error and the repr, verbatim
    (singular "word" for min_len 1)."""
    assert QuotedSpans().evaluate(turn("No quotes.")).explanation == (
        "The answer quotes no span of at least 3 words."
    )
    assert QuotedSpans(min_len=1).evaluate(turn("No quotes.")).explanation == (
        "The answer quotes no span of at least 1 word."
    )
    score = QuotedSpans().evaluate(RagTurn(query="q", answer="“the budget was balanced”"))
    assert score.explanation == (
        "0 of 1 quoted spans of at least 3 words occur in the contexts (the turn has none)."
    )
    message = "quoted_spans: quote_style must be one of ['ragas', 'typographic'], got 'smart'"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        QuotedSpans(quote_style="smart")  # type: ignore[arg-type]
    assert repr(QuotedSpans(normalize_unicode=True, casefold=False, quote_style="ragas")) == (
        "QuotedSpans(casefold=False, min_len=3, quote_style='ragas', normalize_unicode=True)"
    )


def test_ragas_style_details_name_the_context_of_each_match() -> None:
    """In Ragas style a matched span names the first context holding it; an unmatched span,
    and one found only across the join of two contexts, name none."""
    answer = (
        'It said "costs rose by ten", "the budget was balanced" and '
        '"balanced. Costs rose" but not "the budget was lost".'
    )
    score = QuotedSpans(quote_style="ragas").evaluate(turn(answer))
    assert [(s["text"], s["matched"], s["context_index"]) for s in score.details["spans"]] == [
        ("costs rose by ten", True, 1),
        ("the budget was balanced", True, 0),
        ("balanced. Costs rose", True, None),
        ("the budget was lost", False, None),
    ]


def test_match_spans_compares_code_points_by_default_in_ragas_style() -> None:
    """match_spans without normalize_unicode keeps Ragas' comparison: a decomposed quote does
    not match a composed source unless NFC is asked for."""
    answer = '"cre\u0300me bru\u0302le\u0301e recipe"'
    sources = ["A cr\u00e8me br\u00fbl\u00e9e recipe."]
    (plain,) = match_spans(answer, sources, casefold=True, min_len=3, style="ragas")
    assert (plain.matched, plain.context_index) == (False, None)
    (nfc,) = match_spans(
        answer, sources, casefold=True, min_len=3, style="ragas", normalize_unicode=True
    )
    assert (nfc.matched, nfc.context_index) == (True, 0)


def test_single_curly_quote_opening_the_text_is_a_quote() -> None:
    """A ‘ at the very start opens a quote even when the text ends with a letter (the start has
    no left neighbour, so it is no apostrophe)."""
    assert texts("‘hello world again’ said Bob") == ["hello world again"]


def test_empty_quote_closing_at_the_end_of_the_text_counts_with_min_len_zero() -> None:
    """Two straight quotes ending the text make an empty quote (counted when min_len is 0)."""
    assert texts('He said ""', min_len=0) == [""]
