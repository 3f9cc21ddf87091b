"""`citation_markers`: the share of an answer's `[n]` markers that point at a retrieved document.

A groundwire evaluator is any object with a `name` and `evaluate(turn) -> Score` (or an async
`aevaluate`); the entry point names a factory (here the class) that groundwire calls with the
options given for it, e.g. `{"citation_markers": {"require_citation": True}}`.
"""

from __future__ import annotations

import re

from groundwire import RagTurn, Score

__all__ = ["CitationMarkers"]

_MARKER = re.compile(r"\[(\d+)\]")


class CitationMarkers:
    """Score = markers `[n]` with 1 <= n <= number of contexts, over all markers in the answer.

    An answer without markers is not applicable, unless `require_citation` makes it score 0.
    """

    name = "citation_markers"

    def __init__(self, *, require_citation: bool = False) -> None:
        """Configure; a non-bool option fails at once, naming it."""
        if not isinstance(require_citation, bool):
            raise TypeError(
                f"citation_markers: require_citation must be a bool, got {require_citation!r}"
            )
        self.require_citation = require_citation

    def evaluate(self, turn: RagTurn) -> Score:
        """Check every `[n]` marker of the answer against the turn's contexts."""
        markers = [int(n) for n in _MARKER.findall(turn.answer)]
        if not markers:
            if self.require_citation:
                return Score(
                    name=self.name, value=0.0, label="uncited", explanation="no [n] marker"
                )
            return Score.not_applicable(self.name, "no_markers", "the answer has no [n] marker")
        valid = [n for n in markers if 1 <= n <= len(turn.contexts)]
        invalid = sorted(set(markers) - set(valid))
        label = "all_valid" if not invalid else "none_valid" if not valid else "some_valid"
        explanation = f"{len(valid)} of {len(markers)} markers point at a retrieved document"
        if invalid:
            explanation += f"; no document for {', '.join(f'[{n}]' for n in invalid)}"
        return Score(
            name=self.name,
            value=len(valid) / len(markers),
            label=label,
            explanation=explanation,
            details={"markers": markers, "invalid": invalid, "contexts": len(turn.contexts)},
        )
