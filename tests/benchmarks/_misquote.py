"""How the quote benchmarks alter a quote: re-spaced and re-cased, or with typos.

Shared by the quote verification and quote fidelity benchmarks (kept apart so that neither
benchmark module imports the other).
"""

from __future__ import annotations

import random

__all__ = ["respace", "typos"]


def respace(rng: random.Random, text: str) -> str:
    """The text with random whitespace between words and a changed case."""
    words = text.split()
    seps = [rng.choice((" ", "  ", "\n", " \n ", "\t")) for _ in words[1:]]
    out = words[0] + "".join(sep + word for sep, word in zip(seps, words[1:], strict=True))
    return rng.choice((out.upper(), out.lower(), out.title(), out.swapcase()))


def typos(rng: random.Random, text: str) -> str:
    """The text with one random letter edit per ~60 characters."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    chars = list(text)
    edits = max(1, round(len(text) / 60))
    for _ in range(edits):
        positions = [i for i, c in enumerate(chars) if c.isalpha()]
        i = rng.choice(positions[1:-1])
        op = rng.choice(("sub", "del", "ins", "swap"))
        if op == "sub":
            chars[i] = rng.choice([c for c in letters if c != chars[i].lower()])
        elif op == "del":
            del chars[i]
        elif op == "ins":
            chars.insert(i, rng.choice(letters))
        elif chars[i + 1].isalpha() and chars[i + 1] != chars[i]:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        else:
            chars[i] = rng.choice([c for c in letters if c != chars[i].lower()])
    return "".join(chars)
