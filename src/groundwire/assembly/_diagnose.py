"""Why a run found no turns, per trace family: `diagnose(spans)` and the streaming `Diagnoses`.

A trace family is the traces of one service recorded in the same dialects that gave no turn for
the same reason, e.g. "40 traces from service hidden-rag (openllmetry): content not recorded
(TRACELOOP_TRACE_CONTENT=false)". The online runner and `groundwire rescore` print these when
spans were read but no turn was found.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from groundwire.assembly._explain import TraceReport, explain_traces

__all__ = ["Diagnoses", "TraceFamily", "diagnose"]

_MAX_FAMILIES: Final = 100
"""Families remembered (beyond it, new families are counted in `other`)."""


@dataclass(frozen=True, slots=True)
class TraceFamily:
    """Traces of one service, in the same dialects, without a turn for the same reason."""

    service: str | None
    dialects: tuple[str, ...]
    reason: str

    def describe(self, traces: int) -> str:
        """One line: how many traces, from where, and why."""
        service = f"service {self.service}" if self.service else "an unnamed service"
        dialects = f" ({', '.join(self.dialects)})" if self.dialects else ""
        noun = "trace" if traces == 1 else "traces"
        return f"{traces} {noun} from {service}{dialects}: {self.reason}"


class Diagnoses:
    """Counts traces that gave no turn by family. Thread-safe, bounded."""

    def __init__(self, limit: int = 1_000) -> None:
        """Nothing counted yet; at most `limit` traces are explained (the rest only counted)."""
        self._lock = threading.Lock()
        self._families: dict[TraceFamily, int] = {}
        self._limit = limit
        self._explained = 0
        self.other = 0
        """Traces without a turn not explained (past `limit` or the remembered families)."""

    def add(self, spans: Sequence[object]) -> TraceFamily | None:
        """Diagnose one trace's spans that gave no turn; return its family (new ones only)."""
        with self._lock:
            if self._explained >= self._limit:
                self.other += 1
                return None
            self._explained += 1
        new: TraceFamily | None = None
        for report in explain_traces(spans):
            new = self.count(report) or new
        return new

    def count(self, report: TraceReport) -> TraceFamily | None:
        """Count one explained trace if it gave no turn; return its family when new."""
        if report.turn_count or report.reason is None:
            return None
        family = TraceFamily(report.service, tuple(report.dialects), report.reason)
        with self._lock:
            if family in self._families:
                self._families[family] += 1
                return None
            if len(self._families) < _MAX_FAMILIES:
                self._families[family] = 1
                return family
            self.other += 1
        return None

    def __len__(self) -> int:
        """Traces diagnosed."""
        return sum(self._families.values()) + self.other

    def lines(self) -> list[str]:
        """One line per family, most traces first."""
        with self._lock:
            ranked = sorted(self._families.items(), key=lambda item: -item[1])
            other = self.other
        lines = [family.describe(count) for family, count in ranked]
        if other:
            lines.append(f"{other} more traces without a turn (not explained)")
        return lines

    def as_list(self) -> list[dict[str, Any]]:
        """JSON-ready families: service, dialects, reason, traces."""
        with self._lock:
            return [
                {
                    "service": family.service,
                    "dialects": list(family.dialects),
                    "reason": family.reason,
                    "traces": count,
                }
                for family, count in sorted(self._families.items(), key=lambda item: -item[1])
            ]


def diagnose(spans: Iterable[object]) -> list[str]:
    """Why the traces in `spans` that gave no turn gave none, one line per trace family."""
    diagnoses = Diagnoses()
    for report in explain_traces(spans):
        diagnoses.count(report)
    return diagnoses.lines()
