"""Word handling shared by the demo's retriever and its stand-in model."""

from __future__ import annotations

import re

__all__ = ["content_words", "sentences"]

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "me",
        "my",
        "of",
        "on",
        "or",
        "the",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
    ]
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")


def content_words(text: str) -> list[str]:
    """Lowercased words without stop words, a plural `s` cut (a crude stemmer, enough here)."""
    words = (word for word in _WORD.findall(text.lower()) if word not in _STOPWORDS)
    return [word[:-1] if len(word) > 3 and word.endswith("s") else word for word in words]


def sentences(text: str) -> list[str]:
    """The text's sentences and semicolon clauses, whitespace collapsed, end punctuation cut."""
    parts: list[str] = []
    for sentence in _SENTENCE_END.split(" ".join(text.split())):
        for clause in sentence.split("; "):
            clause = clause.strip().rstrip(".!?").strip()
            if clause:
                parts.append(clause)
    return parts
