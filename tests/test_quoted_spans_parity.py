"""Parity of `quoted_spans_alignment(quote_style="ragas")` with the released Ragas 0.4.3 module.

The oracle is Ragas' own `metrics/quoted_spans.py`, loaded by file path: importing the `ragas`
package would pull in dependencies that are not installed (it is installed with --no-deps).
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundwire import RagTurn
from groundwire.evaluators.quoted_spans import QuotedSpans, find_quotes, quoted_spans_alignment

Alignment = Callable[..., dict[str, float]]


def _load_oracle() -> ModuleType | None:
    spec = importlib.util.find_spec("ragas")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location) / "metrics" / "quoted_spans.py"
        if path.is_file():
            module_spec = importlib.util.spec_from_file_location("_ragas_quoted_spans", path)
            assert module_spec is not None and module_spec.loader is not None
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            return module
    return None


_ORACLE = _load_oracle()
pytestmark = pytest.mark.skipif(
    _ORACLE is None,
    reason="Ragas 0.4.3's ragas/metrics/quoted_spans.py is not installed (the parity oracle; "
    "install it with `pip install --no-deps ragas==0.4.3`)",
)


@pytest.fixture(scope="module")
def oracle() -> Alignment:
    """Ragas' released `quoted_spans_alignment`."""
    assert _ORACLE is not None
    function: Alignment = _ORACLE.quoted_spans_alignment
    return function


# Every quotation mark Ragas' pattern knows (", ', `, U+00B4) and every one it does not but
# users write (curly, low, guillemets, CJK), apostrophes, and whitespace and case variants.
_MARKS = ['"', "'", "`", "\u00b4", "“", "”", "‘", "’", "„", "«", "»", "‹", "›", "「", "」"]
_WORDS = [
    "the", "court", "held", "that", "Liability", "WAS", "limited", "it's", "O'Neil", "it’s",
    "Straße", "STRASSE", "İstanbul", "naïve", "東京", "x", "a", "",
]  # fmt: skip
_SPACES = [" ", " ", " ", "  ", "\t", "\n", "\u00a0", "\u2003", "\r\n", "\x1c"]


def _phrase(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    out = ""
    for word in words:
        out += word + rng.choice(_SPACES)
    return out.rstrip(" ") if rng.random() < 0.7 else out


def _vary(rng: random.Random, text: str) -> str:
    """The same text re-cased or re-spaced, as a source might hold it."""
    roll = rng.random()
    if roll < 0.3:
        return text
    if roll < 0.5:
        return text.upper()
    if roll < 0.7:
        return text.replace(" ", rng.choice(["  ", "\n", "\t", " \u00a0"]))
    if roll < 0.85:
        return text.title()
    return text.lower()


def _answer(rng: random.Random) -> tuple[str, list[str]]:
    """An answer quoting a few phrases, and those phrases (to seed the sources with)."""
    if rng.random() < 0.05:
        return "", []
    parts: list[str] = []
    phrases: list[str] = []
    for _ in range(rng.randint(0, 4)):
        parts.append(_phrase(rng, 0, 4))
        phrase = _phrase(rng, 0, 7)
        phrases.append(phrase)
        opener = rng.choice(_MARKS)
        closer = opener if rng.random() < 0.5 else rng.choice(_MARKS)
        if rng.random() < 0.1:
            closer = ""  # unbalanced
        parts.append(opener + rng.choice(["", " "]) + phrase + rng.choice(["", " "]) + closer)
    parts.append(_phrase(rng, 0, 3))
    return rng.choice(_SPACES).join(parts), phrases


def _sources(rng: random.Random, answer: str, phrases: list[str]) -> list[str]:
    sources: list[str] = [_vary(rng, answer)] if rng.random() < 0.3 else []
    for phrase in phrases:
        roll = rng.random()
        if roll < 0.5:
            sources.append(_phrase(rng, 0, 3) + " " + _vary(rng, phrase) + " " + _phrase(rng, 0, 2))
        elif roll < 0.65 and " " in phrase.strip():
            head, tail = phrase.strip().split(" ", 1)  # split across two sources
            sources.extend([_phrase(rng, 0, 2) + " " + head, tail + " " + _phrase(rng, 0, 2)])
        elif roll < 0.8:
            sources.append(_phrase(rng, 1, 8))
    if rng.random() < 0.1:
        sources.append("")
    rng.shuffle(sources) if rng.random() < 0.2 else None
    return sources


def _case(seed: int) -> tuple[list[str], list[list[str]], dict[str, Any]]:
    rng = random.Random(seed)
    answers: list[str] = []
    sources: list[list[str]] = []
    for _ in range(rng.randint(0, 4)):
        answer, phrases = _answer(rng)
        answers.append(answer)
        sources.append(_sources(rng, answer, phrases))
    options = {"casefold": rng.random() < 0.6, "min_len": rng.choice([0, 1, 2, 3, 3, 3, 5])}
    return answers, sources, options


_SEEDS = range(600)


def test_generated_cases_match_ragas(oracle: Alignment) -> None:
    """On 600 generated batches (every quote mark, apostrophes, spacing, case) dicts are equal."""
    totals = matched = empty = 0
    for seed in _SEEDS:
        answers, sources, options = _case(seed)
        expected = oracle(answers, sources, **options)
        got = quoted_spans_alignment(answers, sources, **options)
        assert got == expected, f"seed {seed}: {answers!r} {sources!r} {options}"
        assert list(got) == list(expected)
        assert all(type(v) is float for v in got.values())
        totals += expected["total"] > 0
        matched += 0 < expected["matched"] < expected["total"]
        empty += expected["total"] == 0
    # The generator must exercise every outcome, or this test could not fail.
    assert totals > 200 and matched > 40 and empty > 50, (totals, matched, empty)


def test_evaluator_in_ragas_style_counts_like_ragas(oracle: Alignment) -> None:
    """QuotedSpans(quote_style="ragas") on one turn gives Ragas' matched and total for that row."""
    checked = 0
    for seed in _SEEDS:
        answers, sources, options = _case(seed)
        evaluator = QuotedSpans(quote_style="ragas", **options)
        for answer, passages in zip(answers, sources, strict=True):
            expected = oracle([answer], [passages], **options)
            score = evaluator.evaluate(RagTurn(query="q", contexts=passages, answer=answer))
            if expected["total"] == 0:
                assert score.value is None and score.label == "no_quotes"
                continue
            checked += 1
            assert score.details["total"] == expected["total"]
            assert score.details["matched"] == expected["matched"]
            assert score.value == expected["citation_alignment_quoted_spans"]
    assert checked > 100


_PIECES = st.sampled_from(
    [*_MARKS, "a", "b", "B", "ß", "İ", " ", "\n", "\t", "\u00a0", "'s", "ab "]
)


def _texts(max_size: int) -> st.SearchStrategy[str]:
    return st.lists(_PIECES, max_size=max_size).map("".join)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    answers=st.lists(_texts(30), max_size=3),
    source_text=_texts(40),
    casefold=st.booleans(),
    min_len=st.integers(0, 4),
    quote_own_answer=st.booleans(),
)
def test_arbitrary_text_matches_ragas(
    answers: list[str], source_text: str, casefold: bool, min_len: int, quote_own_answer: bool
) -> None:
    """On arbitrary strings over a quote-heavy alphabet, the dicts are equal."""
    assert _ORACLE is not None
    sources = [
        [source_text, answer.upper() if quote_own_answer else answer[::2]] for answer in answers
    ]
    expected = _ORACLE.quoted_spans_alignment(answers, sources, casefold=casefold, min_len=min_len)
    assert quoted_spans_alignment(answers, sources, casefold=casefold, min_len=min_len) == expected


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=_texts(40), min_len=st.integers(0, 4))
def test_ragas_style_finder_extracts_what_ragas_extracts(text: str, min_len: int) -> None:
    """find_quotes(style="ragas") yields exactly the spans Ragas' extractor yields, in order."""
    assert _ORACLE is not None
    expected = list(_ORACLE._extract_quoted_spans(text, min_len=min_len))
    assert [q.text for q in find_quotes(text, style="ragas", min_len=min_len)] == expected


def test_empty_inputs_match_ragas(oracle: Alignment) -> None:
    """No answers, empty answers and empty source lists give Ragas' zeros."""
    for answers, sources in [([], []), ([""], [[]]), (['"a b c"'], [[]]), (["x"], [[""]])]:
        assert quoted_spans_alignment(answers, sources) == oracle(answers, sources)


def test_mismatched_lengths_raise_like_ragas(oracle: Alignment) -> None:
    """answers and sources of different lengths raise ValueError, as Ragas does."""
    with pytest.raises(ValueError, match="same length"):
        oracle(["a"], [])
    with pytest.raises(ValueError, match="same length: got 1 answers and 0 source lists"):
        quoted_spans_alignment(["a"], [])
