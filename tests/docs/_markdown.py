"""Fenced code blocks of the docs, found by the heading they sit under, for the docs' tests."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root."""

_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its language, text, and the line it starts on."""

    lang: str
    text: str
    line: int


def blocks(relative: str, lang: str | None = None) -> list[Block]:
    """Every fenced block of the Markdown file `relative` (to the root), of `lang` if given."""
    text = (ROOT / relative).read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        if lang is None or match.group(1) == lang:
            line = text.count("\n", 0, match.start()) + 1
            found.append(Block(match.group(1), match.group(2), line))
    return found
