"""The state a quote is shown in is a pure function of quoted_spans' and quote_verification's rows.

Every combination of a quoted_spans row (none, found verbatim, not found) with a
quote_verification row (none, and each way a real `QuoteVerification` located a quote) is
pinned. The rows come from the real evaluators, so a change in their details shows here.
"""

from __future__ import annotations

from typing import Any

import pytest

from groundwire import Context, RagTurn
from groundwire.evaluators import QuoteVerification
from groundwire.offline.writers._quote_state import STATES, QuoteState, quote_state

SOURCE = (
    "The library began in 1887 as a reading room, stocked with four hundred volumes donated "
    "by the shipping families. Members shall not remove books from the reading hall. "
    "The reading room was designed by Margaret Hale and opened on a Tuesday in spring."
)
QUOTES = {
    "exact": "four hundred volumes donated by the shipping families",
    "respaced": "four hundred   volumes, donated by the shipping families",
    "ellipsis": "The library began in 1887 … donated by the shipping families",
    "typo": "Members shall not remvoe books from the reading hall",
    "reworded": "Members shall not remove any books from the reading hall",
    "number": "four volumes donated by the shipping families",
    "negation": "Members shall remove books from the reading hall",
    "modal": "Members may not remove books from the reading hall",
    "name": "designed by Margaret Stone and opened on a Tuesday",
    "closest": "a fine of one dollar a day is charged for every late book in the reading room",
    "nowhere": "zebras quickly jumped over xylophones",
}
"""One quote per way quote_verification can see it."""

ALONE: dict[str | None, tuple[str, tuple[str, ...], bool] | None] = {
    None: None,
    "exact": ("verbatim", (), False),
    "respaced": ("not_verbatim", ("respaced",), False),
    "ellipsis": ("not_verbatim", ("ellipsis",), False),
    "typo": ("not_verbatim", ("typo",), False),
    "reworded": ("not_verbatim", ("reworded",), False),
    "number": ("changed", ("number",), False),
    "negation": ("changed", ("negation",), False),
    "modal": ("changed", ("modal",), False),
    "name": ("changed", ("name",), False),
    "closest": ("not_found", (), True),
    "nowhere": ("not_found", (), False),
}
"""(state, kinds, closest) from quote_verification alone (None: it did not run)."""

VERBATIM_HIT = {"text": "x", "start": 0, "end": 1, "matched": True, "context_index": 0}
VERBATIM_MISS = {"text": "x", "start": 0, "end": 1, "matched": False, "context_index": None}


def _expected(spans: str | None, verify: str | None) -> tuple[str, tuple[str, ...], bool] | None:
    """What the combination must give: a verbatim hit wins; a verbatim miss turns quote
    verification's normalised exact hit into "respaced"; quoted_spans alone says found or not."""
    if spans == "hit":
        return ("verbatim", (), False)
    if spans == "miss" and verify is None:
        return ("not_found", (), False)
    if spans == "miss" and verify == "exact":
        return ("not_verbatim", ("respaced",), False)
    return ALONE[verify]


@pytest.fixture(scope="module")
def rows() -> dict[str, dict[str, Any]]:
    """quote_verification's row for each quote, from the real evaluator."""
    evaluator = QuoteVerification(embedder=None)
    out = {}
    for case, quote in QUOTES.items():
        turn = RagTurn(
            query="q", contexts=[Context(text=SOURCE, id="history")], answer=f"It says “{quote}”."
        )
        out[case] = evaluator.evaluate(turn).details["quotes"][0]
    return out


@pytest.mark.parametrize("verify", list(ALONE))
@pytest.mark.parametrize("spans", [None, "hit", "miss"])
def test_every_combination_of_rows_gives_one_state(
    rows: dict[str, dict[str, Any]], spans: str | None, verify: str | None
) -> None:
    """Each (quoted_spans, quote_verification) pair of rows maps to its one state."""
    spans_row = {"hit": VERBATIM_HIT, "miss": VERBATIM_MISS, None: None}[spans]
    state = quote_state(spans_row, rows[verify] if verify else None)
    want = _expected(spans, verify)
    if want is None:
        assert state is None
        return
    assert state is not None
    assert (state.state, state.kinds, state.closest) == want
    assert len(state.evidence) == (spans is not None) + (verify is not None)


def test_several_meaning_changes_are_all_named_in_a_fixed_order() -> None:
    """A quote that changes a name and a number says both, number first; unknown kinds last."""
    row = {
        "low_confidence": True,
        "match_kind": "fuzzy",
        "meaning_changes": [{"kind": "entity"}, {"kind": "number"}, {"kind": "tense"}],
    }
    state = quote_state(None, row)
    assert state is not None
    assert state == QuoteState("changed", ("number", "name", "tense"), evidence=state.evidence)
    assert state.label == "changed meaning: number, name, tense"


def test_several_differences_are_all_named() -> None:
    """An ellipsis quote with a typo is 'found, not verbatim: ellipsis, typo'."""
    row = {
        "low_confidence": False,
        "match_kind": "ellipsis",
        "edits": [{"kind": "elided"}, {"kind": "typo"}],
    }
    state = quote_state(None, row)
    assert state is not None and state.label == "found, not verbatim: ellipsis, typo"


def test_evidence_says_what_each_evaluator_found(rows: dict[str, dict[str, Any]]) -> None:
    """The hover text names each evaluator and its finding, the misquote's reason included."""
    state = quote_state(VERBATIM_MISS, rows["number"])
    assert state is not None
    assert state.evidence[0] == "quoted_spans: not found verbatim in any context"
    assert state.evidence[1].startswith("quote_verification: not verified, match ratio 0.9")
    assert "number changed: 'four hundred' -> 'four'" in state.evidence[1]


def test_every_state_has_a_distinct_class_symbol_and_label() -> None:
    """The legend's states differ in colour class, symbol and words (colour is never alone)."""
    for field in ("css", "symbol", "label"):
        values = [getattr(style, field) for style in STATES.values()]
        assert len(set(values)) == len(values)
