"""Emission: the runner's results and counts turned into telemetry through the `Emitter`.

Every metric point and evaluation span the background runner makes goes through here, routed to
the emitter of the turn's app (`Emitter.for_service`), so admission and execution only say what
happened.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from groundwire import semconv
from groundwire._evaluator import EvaluationOutcome
from groundwire._types import RagTurn, Score
from groundwire.emit import Emitter
from groundwire.runner._jobs import InlineResult, service_of

__all__ = ["Emission"]

logger = logging.getLogger("groundwire.runner")


class Emission:
    """The runner's way out: metric points per evaluation and one carrier span per turn."""

    def __init__(
        self, emitter: Emitter, all_names: tuple[str, ...], background_names: tuple[str, ...]
    ) -> None:
        self.emitter = emitter
        self._all_names = all_names
        """Every configured evaluator: a sampled-out turn counts each of them."""
        self._background_names = background_names
        """The background evaluators: a dropped turn counts each of them."""

    def for_turn(self, turn: RagTurn | None) -> Emitter:
        """The emitter of the turn's app (`Emitter.for_service`; one app: the runner's own)."""
        return self.emitter.for_service(service_of(turn))

    def record(self, turn: RagTurn, outcome: EvaluationOutcome) -> None:
        """Metric points for one evaluation's result."""
        self.for_turn(turn).record(outcome.score, outcome.duration_s)

    def record_inline(self, inline: InlineResult, turn: RagTurn | None) -> None:
        """Metric points for what inline evaluation did to one turn."""
        emitter = self.for_turn(turn)
        for outcome in inline.outcomes:
            emitter.record(outcome.score, outcome.duration_s)
        for name in inline.sampled_out:
            emitter.record_outcome(name, semconv.OUTCOME_SAMPLED_OUT)

    def count(self, turn: RagTurn | None, names: Iterable[str], outcome: str) -> None:
        """Count each named evaluation of the turn as `outcome` (error, dropped, skipped, ...)."""
        emitter = self.for_turn(turn)
        for name in names:
            emitter.record_outcome(name, outcome)

    def count_turns(self, deferred: Mapping[tuple[str, str | None], int]) -> None:
        """Count whole turns sampled out or dropped, by (outcome, service): every evaluator for
        a sampled-out turn, the background ones for a dropped turn."""
        for (outcome, service), turns in deferred.items():
            names = self._all_names if outcome == semconv.OUTCOME_SAMPLED_OUT else None
            emitter = self.emitter.for_service(service)
            for name in names or self._background_names:
                emitter.record_outcome(name, outcome, turns)

    def emit_span(self, turn: RagTurn, scores: list[Score]) -> None:
        """The turn's evaluation carrier span (a failure is logged, never raised)."""
        if not scores or turn.trace_id is None or turn.span_id is None:
            return
        try:
            self.for_turn(turn).emit_span((turn.trace_id, turn.span_id), scores)
        except Exception:
            logger.warning("could not emit the evaluation span", exc_info=True)
