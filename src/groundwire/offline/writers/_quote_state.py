"""The one state a quote of an answer is shown in, decided from the evaluators' details.

Two evaluators look at the same quotes: `quoted_spans` (a row per quote in `details["spans"]`:
found verbatim or not) and `quote_verification` (a row per quote in `details["quotes"]`: where
it was located, how it differs, what meaning it changes). A reader needs one verdict per quote,
so `quote_state` merges the two rows into one of four states:

- `verbatim`: the quote occurs in a context as written (spacing and case aside);
- `not_verbatim`: found, but not word for word; `kinds` say how: `respaced` (spacing, case or
  punctuation only), `ellipsis` (an ellipsis joins separate parts), `typo`, `reworded`
  (words added, dropped or replaced without a change of meaning);
- `changed`: found, but it changes what the source says; `kinds` say what: `number`,
  `negation`, `modal`, `name`;
- `not_found`: no evaluator found it. When quote_verification still names the closest window
  (below its confidence threshold), `closest` is True: that window is shown as a neutral
  "closest passage", never as where the quote came from.

A verbatim hit is proof and wins over anything else; otherwise quote_verification, which knows
more, decides; `quoted_spans` alone can only say verbatim or not found. The function is pure
(rows in, state out), so the report's colours can be tested on every combination.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

__all__ = [
    "CHANGE_NAMES",
    "STATES",
    "QuoteState",
    "StateName",
    "StateStyle",
    "quote_state",
]

StateName: TypeAlias = Literal["verbatim", "not_verbatim", "changed", "not_found"]


@dataclass(frozen=True, slots=True)
class StateStyle:
    """How a state is shown: CSS class, symbol and short label, and the legend's sentence."""

    css: str
    symbol: str
    label: str
    meaning: str


STATES: Final[dict[StateName, StateStyle]] = {
    "verbatim": StateStyle(
        "ok", "✓", "verified verbatim", "the quote occurs in a context as written"
    ),
    "not_verbatim": StateStyle(
        "near",
        "≈",
        "found, not verbatim",
        "found in a context, but respaced, shortened with an ellipsis, with a typo or reworded"
        " (the label says which); the meaning is unchanged",
    ),
    "changed": StateStyle(
        "changed",
        "≠",
        "changed meaning",
        "found, but it changes a number, a negation, a modal verb or a name of its source",
    ),
    "not_found": StateStyle(
        "bad", "✗", "not found", "no evaluator found the quote in the contexts"
    ),
}
"""Every state, in the legend's order."""

CHANGE_NAMES: Final = {
    "number": "number",
    "negation": "negation",
    "modality": "modal",
    "entity": "name",
}
"""quote_verification's meaning-change kinds, as the report names them."""

_NOT_VERBATIM_ORDER: Final = ("respaced", "ellipsis", "typo", "reworded")
_REWORDING: Final = frozenset({"changed", "added", "dropped"})


@dataclass(frozen=True, slots=True)
class QuoteState:
    """One quote's verdict: the state, which kinds of difference, and what each evaluator said."""

    state: StateName
    kinds: tuple[str, ...] = ()
    """For `not_verbatim`: respaced, ellipsis, typo, reworded; for `changed`: number, negation,
    modal, name; empty otherwise."""
    closest: bool = False
    """For `not_found`: quote_verification names a closest window (shown neutral)."""
    evidence: tuple[str, ...] = ()
    """One line per evaluator that looked at the quote (the report shows them on hover)."""

    @property
    def style(self) -> StateStyle:
        """The state's CSS class, symbol and label."""
        return STATES[self.state]

    @property
    def label(self) -> str:
        """The text shown beside the quote: "found, not verbatim: typo"."""
        style = STATES[self.state]
        return f"{style.label}: {', '.join(self.kinds)}" if self.kinds else style.label


def _number(value: Any) -> str:
    """A ratio for an evidence line ("0.93"), or "?" when it is not a number."""
    return f"{value:.2f}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"


def _spans_evidence(row: Mapping[str, Any]) -> str:
    """What quoted_spans said about the quote."""
    if row.get("matched"):
        return f"quoted_spans: found verbatim in context {row.get('context_index')}"
    return "quoted_spans: not found verbatim in any context"


def _verify_evidence(row: Mapping[str, Any]) -> str:
    """What quote_verification said about the quote."""
    ratio = _number(row.get("match_ratio"))
    if row.get("low_confidence"):
        reason = row.get("low_confidence_reason") or "below the confidence threshold"
        return f"quote_verification: not verified, match ratio {ratio} ({reason})"
    where = row.get("source_doc")
    return f"quote_verification: {row.get('match_kind')} match in {where}, match ratio {ratio}"


def _changes(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The meaning-change kinds of a quote_verification row, named and deduplicated, in order."""
    found = {
        CHANGE_NAMES.get(str(change.get("kind")), str(change.get("kind")))
        for change in row.get("meaning_changes") or ()
        if isinstance(change, Mapping)
    }
    known = tuple(name for name in CHANGE_NAMES.values() if name in found)
    return known + tuple(sorted(found.difference(known)))


def _differences(row: Mapping[str, Any]) -> tuple[str, ...]:
    """How a located, meaning-preserving quote differs from its source (never empty)."""
    edits = {str(e.get("kind")) for e in row.get("edits") or () if isinstance(e, Mapping)}
    kinds: set[str] = set()
    if row.get("match_kind") == "ellipsis" or "elided" in edits:
        kinds.add("ellipsis")
    if "typo" in edits:
        kinds.add("typo")
    if edits & _REWORDING:
        kinds.add("reworded")
    if not kinds:
        kinds.add("respaced")
    return tuple(kind for kind in _NOT_VERBATIM_ORDER if kind in kinds)


def _from_verification(
    row: Mapping[str, Any], verbatim_miss: bool, evidence: tuple[str, ...]
) -> QuoteState:
    """The state quote_verification's row gives (`verbatim_miss`: quoted_spans did not find it)."""
    changes = _changes(row)
    if changes:
        return QuoteState("changed", changes, evidence=evidence)
    if row.get("low_confidence", True):
        located = isinstance(row.get("doc_start"), int) and isinstance(row.get("doc_end"), int)
        closest = located and row.get("match_kind") != "none"
        return QuoteState("not_found", closest=closest, evidence=evidence)
    if row.get("match_kind") == "exact" and not row.get("edits") and not verbatim_miss:
        return QuoteState("verbatim", evidence=evidence)
    return QuoteState("not_verbatim", _differences(row), evidence=evidence)


def quote_state(
    spans_row: Mapping[str, Any] | None, verify_row: Mapping[str, Any] | None
) -> QuoteState | None:
    """The quote's one state from quoted_spans' row and quote_verification's row (either may be
    missing: that evaluator did not run, was skipped or failed); None when both are missing."""
    evidence = tuple(
        line
        for line in (
            _spans_evidence(spans_row) if spans_row is not None else None,
            _verify_evidence(verify_row) if verify_row is not None else None,
        )
        if line is not None
    )
    if spans_row is not None and spans_row.get("matched"):
        return QuoteState("verbatim", evidence=evidence)
    if verify_row is not None:
        return _from_verification(verify_row, spans_row is not None, evidence)
    if spans_row is not None:
        return QuoteState("not_found", evidence=evidence)
    return None
