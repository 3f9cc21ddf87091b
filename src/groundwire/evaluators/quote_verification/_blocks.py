"""The differences between a quote's words and its span's: typos told apart from changes, edits
merged into blocks, and the meaning changes each block makes (numbers, negation, modality,
names)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from rapidfuzz.distance import OSA, Levenshtein

from groundwire.evaluators.quote_verification._changes import (
    ChangeKind,
    EditKind,
    MeaningChange,
    QuoteEdit,
)
from groundwire.evaluators.quote_verification._side import ELLIPSIS, Side
from groundwire.evaluators.quote_verification._words import MODALS, negations, number_word

__all__ = ["Block", "differences", "edit", "meaning_changes"]

_NAME_PARTS = re.compile(r"[._/]")
"""Where dotted, snake_case and path names divide into parts."""


def _special(word: str) -> bool:
    """True for a word whose change changes meaning by itself (number, negator, modal)."""
    return number_word(word) is not None or negations(word) > 0 or word in MODALS


def _negated(word: str, other: str) -> bool:
    """True when `word` is `other` negated: "never"/"ever", "neither"/"either", "don't"/"do"."""
    return (word.startswith("n") and word[1:] == other) or (
        word.endswith("n't") and word[:-3] == other
    )


def _is_typo(a: str, b: str) -> bool:
    """True when the quote's word `a` is a slip for the source's `b` (one letter apart, two from
    eight letters on). Never for numerals, nor when `a` is itself a number, negator or modal,
    nor when one word is the other negated ("either" for "neither"). In a dotted, snake_case or
    path name the allowance is per part, and only one part may slip: "config.yaml" is not a
    slip for "config.toml", though the whole names are two letters apart; names that differ only
    in their separators ("U.S." and "US") are the same name."""
    if any(c.isdigit() for c in a) or any(c.isdigit() for c in b):
        return False
    if _special(a) or _negated(a, b) or _negated(b, a):
        return False
    parts_a, parts_b = _NAME_PARTS.split(a), _NAME_PARTS.split(b)
    if len(parts_a) > 1 or len(parts_b) > 1:
        if "".join(parts_a) == "".join(parts_b):
            return True  # only the dots or underscores differ: "U.S." for "US", "e.g." for "eg"
        slips = [(x, y) for x, y in zip(parts_a, parts_b, strict=False) if x != y]
        return len(parts_a) == len(parts_b) and len(slips) == 1 and _is_typo(*slips[0])
    longest = max(len(a), len(b))
    if longest <= 2:  # two letters swapped ("ot" for "to"), never for a meaningful word
        return sorted(a) == sorted(b) and not _special(b)
    allowed = 1 if longest <= 7 else 2
    return OSA.distance(a, b, score_cutoff=allowed) <= allowed


@dataclass(slots=True)
class Block:
    """A stretch of differences: quote words [i1, i2) against source words [j1, j2)."""

    kind: Literal["change", "typo", "elided"]
    i1: int
    i2: int
    j1: int
    j2: int


def differences(quote: Side, source: Side) -> list[Block]:
    """Differences from the word alignment: typo pairs and ellipsis gaps apart, the rest merged.

    A typo makes the quote's word read as the source's (`quote.sense`)."""
    pieces: list[Block] = []
    for op in Levenshtein.opcodes(quote.words, source.words):
        tag, i1, i2, j1, j2 = op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end
        if tag == "equal":
            continue
        if tag == "replace":
            for k in range(i2 - i1):
                q, s = quote.words[i1 + k], source.words[j1 + k]
                if q == ELLIPSIS:
                    kind: Literal["change", "typo", "elided"] = "elided"
                elif _is_typo(q, s):
                    kind = "typo"
                    quote.sense[i1 + k] = s
                else:
                    kind = "change"
                pieces.append(Block(kind, i1 + k, i1 + k + 1, j1 + k, j1 + k + 1))
        elif tag == "insert":  # in the source only
            pieces.append(Block("change", i1, i1, j1, j2))
        else:  # in the quote only
            for k in range(i1, i2):
                kind = "elided" if quote.words[k] == ELLIPSIS else "change"
                pieces.append(Block(kind, k, k + 1, j1, j1))
    merged: list[Block] = []
    for piece in pieces:
        last = merged[-1] if merged else None
        adjacent = last is not None and last.i2 == piece.i1 and last.j2 == piece.j1
        if last is not None and adjacent:
            dropped = piece.i1 == piece.i2 or last.i1 == last.i2
            if last.kind == piece.kind == "change" or (
                "elided" in (last.kind, piece.kind)
                and "typo" not in (last.kind, piece.kind)
                and dropped
            ):
                if piece.kind == "elided":
                    last.kind = "elided"
                last.i2, last.j2 = piece.i2, piece.j2
                continue
        merged.append(piece)
    return merged


def _widened(block: Block, quote: Side, source: Side) -> tuple[int, int, int, int]:
    """A block with one shared neighbouring word when one side is empty ("shall not" -> "shall")."""
    i1, i2, j1, j2 = block.i1, block.i2, block.j1, block.j2
    if i1 == i2 or j1 == j2:
        if i1 > 0 and j1 > 0:
            return i1 - 1, i2, j1 - 1, j2
        if i2 < len(quote) and j2 < len(source):
            return i1, i2 + 1, j1, j2 + 1
    return i1, i2, j1, j2


def _change(
    kind: ChangeKind, quote: Side, qi: tuple[int, int], source: Side, sj: tuple[int, int]
) -> MeaningChange:
    """A meaning change covering quote words `qi` and source words `sj`."""
    q_text, q_start, q_end = quote.span(*qi)
    s_text, s_start, s_end = source.span(*sj)
    return MeaningChange(kind, s_text, q_text, q_start, q_end, s_start, s_end)


def _modals(side: Side, indexes: range) -> list[str]:
    """The modal verbs among the words, by their base ("May" of a date is a month, not one)."""
    return [
        m for i in indexes if (m := MODALS.get(side.meaning(i))) is not None and not side.numeric(i)
    ]


def meaning_changes(block: Block, quote: Side, source: Side) -> list[MeaningChange]:
    """The meaning changes one block of differences makes."""
    said = range(block.i1, block.i2)
    wrote = range(block.j1, block.j2)
    i1, i2, j1, j2 = _widened(block, quote, source)
    changes: list[MeaningChange] = []
    q_numbers = quote.numbers(block.i1, block.i2)
    s_numbers = source.numbers(block.j1, block.j2)
    if sorted(p[2] for p in q_numbers) != sorted(p[2] for p in s_numbers):
        qi = (min(p[0] for p in q_numbers), max(p[1] for p in q_numbers)) if q_numbers else None
        sj = (min(p[0] for p in s_numbers), max(p[1] for p in s_numbers)) if s_numbers else None
        changes.append(_change("number", quote, qi or (i1, i2), source, sj or (j1, j2)))
    q_neg = sum(negations(quote.meaning(i)) for i in said)
    if q_neg != sum(negations(source.meaning(j)) for j in wrote):
        changes.append(_change("negation", quote, (i1, i2), source, (j1, j2)))
    q_modals = sorted(_modals(quote, said))
    s_modals = sorted(_modals(source, wrote))
    if q_modals != s_modals:
        changes.append(_change("modality", quote, (i1, i2), source, (j1, j2)))
    q_names = (
        sorted(quote.meaning(i) for i in said if quote.entity(i)) if quote.may_name(said) else []
    )
    s_names = (
        sorted(source.meaning(j) for j in wrote if source.entity(j))
        if source.may_name(wrote)
        else []
    )
    if q_names != s_names:
        changes.append(_change("entity", quote, (block.i1, block.i2), source, (j1, j2)))
    return changes


def edit(block: Block, quote: Side, source: Side) -> QuoteEdit:
    """The edit a block of differences is."""
    q_text, q_start, q_end = quote.span(block.i1, block.i2)
    s_text, s_start, s_end = source.span(block.j1, block.j2)
    if block.kind != "change":
        kind: EditKind = block.kind
    elif not q_text:
        kind = "dropped"
    elif not s_text:
        kind = "added"
    else:
        kind = "changed"
    return QuoteEdit(kind, q_text, s_text, q_start, q_end, s_start, s_end)
