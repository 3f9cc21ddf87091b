"""Word tables for the meaning check: number words, negators, modals, spelling variants.

Kept apart from the algorithm (`_fidelity.py` and the modules it uses) so that the lists can be
read and extended alone. All entries are case-folded, with straight apostrophes (the normalised
form of the text).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

__all__ = [
    "CURRENCY_WORDS",
    "MODALS",
    "MONTHS",
    "NEGATORS",
    "PERCENT_WORDS",
    "SCALES",
    "STOPWORDS",
    "canonical",
    "negations",
    "number_word",
]

_UNITS: Final = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS: Final = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINAL_UNITS: Final = [
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
]
_ORDINAL_TENS: Final = [
    "twentieth",
    "thirtieth",
    "fortieth",
    "fiftieth",
    "sixtieth",
    "seventieth",
    "eightieth",
    "ninetieth",
]
SCALES: Final[dict[str, int]] = {
    "hundred": 100,
    "thousand": 1_000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "trillion": 1_000_000_000_000,
}
"""Number words that multiply what comes before them."""

_NUMBER_WORDS: Final[dict[str, tuple[float, bool]]] = {
    **{word: (float(value), False) for value, word in enumerate(_UNITS)},
    **{word: (float(20 + 10 * i), False) for i, word in enumerate(_TENS)},
    **{word: (float(value), True) for value, word in enumerate(_ORDINAL_UNITS)},
    **{word: (float(20 + 10 * i), True) for i, word in enumerate(_ORDINAL_TENS)},
    **{word: (float(value), False) for word, value in SCALES.items()},
    "hundredth": (100.0, True),
    "thousandth": (1000.0, True),
    "millionth": (1e6, True),
    "dozen": (12.0, False),
    "half": (0.5, False),
    "twice": (2.0, False),
}


def number_word(word: str) -> tuple[float, bool] | None:
    """(value, is_ordinal) of a number word ("four", "hundred", "third"), else None."""
    return _NUMBER_WORDS.get(word)


MONTHS: Final[dict[str, int]] = {
    **{
        name: index
        for index, name in enumerate(
            [
                "january",
                "february",
                "march",
                "april",
                "may",
                "june",
                "july",
                "august",
                "september",
                "october",
                "november",
                "december",
            ],
            start=1,
        )
    },
    **{
        name: index
        for index, name in enumerate(
            ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
            start=1,
        )
    },
    "sept": 9,
}
"""Month names (a date's part when capitalised, or "may" next to a numeral)."""

PERCENT_WORDS: Final = frozenset({"percent", "per cent", "pct"})
CURRENCY_WORDS: Final[dict[str, str]] = {
    "$": "$",
    "dollar": "$",
    "dollars": "$",
    "usd": "$",
    "€": "€",
    "euro": "€",
    "euros": "€",
    "eur": "€",
    "£": "£",
    "pound": "£",
    "pounds": "£",
    "gbp": "£",
    "¥": "¥",
    "yen": "¥",
    "cent": "¢",
    "cents": "¢",
}
"""Currency symbols and words, by the symbol they stand for ("5 dollars" is "$5")."""

NEGATORS: Final = frozenset(
    {"not", "no", "never", "without", "neither", "nor", "none", "nobody", "nothing", "nowhere"}
)
"""Words that negate (contractions in n't and "cannot" are recognised too)."""

MODALS: Final[dict[str, str]] = {
    "may": "may",
    "might": "might",
    "must": "must",
    "mustn't": "must",
    "shall": "shall",
    "shan't": "shall",
    "should": "should",
    "shouldn't": "should",
    "can": "can",
    "cannot": "can",
    "can't": "can",
    "could": "could",
    "couldn't": "could",
    "will": "will",
    "won't": "will",
    "would": "would",
    "wouldn't": "would",
    "mightn't": "might",
}
"""Deontic and epistemic modal verbs, by their base (negative forms also count as a negation)."""

STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "he",
        "she",
        "they",
        "we",
        "you",
        "i",
        "his",
        "her",
        "their",
        "our",
        "your",
        "my",
        "and",
        "or",
        "but",
        "if",
        "then",
        "so",
        "as",
        "at",
        "by",
        "for",
        "from",
        "in",
        "into",
        "of",
        "on",
        "onto",
        "to",
        "with",
        "within",
        "upon",
        "over",
        "under",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "there",
        "here",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "why",
        "how",
        "all",
        "any",
        "each",
        "every",
        "some",
        "such",
        "other",
        "another",
        "many",
        "much",
        "more",
        "most",
        "few",
        "less",
        "also",
        "only",
        "even",
        "just",
        "yet",
        "still",
        "after",
        "before",
        "while",
        "since",
        "until",
        "unless",
        "although",
        "though",
        "because",
        "however",
        "therefore",
        "thus",
        "hence",
        "moreover",
        "furthermore",
        "section",
        "article",
        "chapter",
        "part",
        "clause",
    ]
)
"""Function words: capitalised, they start a sentence or a heading rather than name something."""


def negations(word: str) -> int:
    """How many negations one (case-folded) word carries: "not" 1, "can't" 1, "cannot" 1."""
    if word in NEGATORS or word == "cannot" or word.endswith("n't"):
        return 1
    return 0


# British -> American spelling rules, applied to both sides so that variants compare equal.
_SPELLING_RULES: Final = (
    (re.compile(r"^(\w{3,})our(s|ed|ing|ful|ite|ites|able|er|ers)?$"), r"\1or\2"),
    (re.compile(r"^(\w{2,})is(e|ed|es|er|ers|ing|ation|ations)$"), r"\1iz\2"),
    (re.compile(r"^(\w{2,})ys(e|ed|es|ing)$"), r"\1yz\2"),
    (re.compile(r"^(\w{2,}[^aeiou\W])tre(s)?$"), r"\1ter\2"),
    (re.compile(r"^(\w{2,})ence$"), r"\1ense"),
    (re.compile(r"^(\w{3,}[aeiou])ll(ed|ing|er|ers)$"), r"\1l\2"),
    (re.compile(r"^(\w{3,})ogue(s)?$"), r"\1og\2"),
)
_SPELLING_WORDS: Final = {
    "grey": "gray",
    "programme": "program",
    "programmes": "programs",
    "aluminium": "aluminum",
    "cheque": "check",
    "cheques": "checks",
    "tyre": "tire",
    "tyres": "tires",
    "kerb": "curb",
    "plough": "plow",
    "judgement": "judgment",
    "ageing": "aging",
    "whilst": "while",
    "amongst": "among",
}


@lru_cache(maxsize=65_536)
def canonical(word: str) -> str:
    """The word with British spellings mapped to American ones ("colour" -> "color") and a
    possessive 's dropped."""
    if word.endswith("'s") or word.endswith("'"):  # possessives: "Program's" is "Program"
        word = word[:-2] if word.endswith("'s") else word[:-1]
    if word in _SPELLING_WORDS:
        return _SPELLING_WORDS[word]
    if len(word) < 5 or not word.isalpha() or word in _NUMBER_WORDS:
        return word
    for pattern, replacement in _SPELLING_RULES:
        changed = pattern.sub(replacement, word)
        if changed != word:
            return changed
    return word
