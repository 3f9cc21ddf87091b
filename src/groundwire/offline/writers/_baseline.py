"""Before and after: a re-score compared with an earlier scores file of the same traces.

Teams re-score after changing a prompt, a retriever or a judge and want to see what changed.
`load_baseline` reads the earlier run's `.jsonl` or `.csv` scores (what `rescore --out` wrote);
`Comparison` is fed the new run's results as they come (`add`, an `on_results` hook) and keeps,
per evaluator, both runs' histograms and means, and per turn matched by `(trace_id, span_id)`
the largest drop and the largest rise. Turns present in only one run are counted, not compared.
Memory: the baseline's values (a few floats per turn) and the `keep` most changed turns.
"""

from __future__ import annotations

import csv
import heapq
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from groundwire._jsonlines import json_lines
from groundwire._numbers import finite_float
from groundwire.offline._results import TurnResult
from groundwire.offline.writers._report_style import BINS

__all__ = ["Baseline", "BaselineError", "Change", "Comparison", "EvaluatorShift", "load_baseline"]

_EPSILON: Final = 1e-9
"""Differences smaller than this are no change."""

_Key = tuple[str, str]


class BaselineError(ValueError):
    """The baseline file cannot be read as a scores file (says which line and why)."""


@dataclass(frozen=True, slots=True)
class Baseline:
    """An earlier run's scores: turn key -> (query, evaluator -> value or None)."""

    path: str
    turns: dict[_Key, tuple[str | None, dict[str, float | None]]]


def _jsonl(path: Path) -> dict[_Key, tuple[str | None, dict[str, float | None]]]:
    """The records of a `.jsonl` scores file."""
    turns: dict[_Key, tuple[str | None, dict[str, float | None]]] = {}
    with path.open(encoding="utf-8") as lines:
        for where, record in json_lines(lines, path, BaselineError):
            scores = record.get("scores") if isinstance(record, dict) else None
            if not isinstance(scores, dict):
                raise BaselineError(f"{where}: not a scores record (no 'scores' object)")
            key = (str(record.get("trace_id") or ""), str(record.get("span_id") or ""))
            turns[key] = (record.get("query"), {str(k): finite_float(v) for k, v in scores.items()})
    return turns


def _csv(path: Path) -> dict[_Key, tuple[str | None, dict[str, float | None]]]:
    """The rows of a `.csv` scores file (one value and one `.label` column per evaluator)."""
    turns: dict[_Key, tuple[str | None, dict[str, float | None]]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        columns = reader.fieldnames or []
        if "trace_id" not in columns:
            raise BaselineError(f"{path}: not a scores file (no trace_id column)")
        names = [c for c in columns if c not in ("trace_id", "span_id", "query", "details")]
        names = [c for c in names if not c.endswith(".label")]
        for row in reader:
            key = (row.get("trace_id") or "", row.get("span_id") or "")
            turns[key] = (row.get("query"), {name: finite_float(row.get(name)) for name in names})
    return turns


def load_baseline(path: str | os.PathLike[str]) -> Baseline:
    """An earlier run's scores from a `.jsonl` or `.csv` file written by `rescore`;
    BaselineError saying what is wrong otherwise."""
    where = Path(path)
    suffix = where.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise BaselineError(
            f"{where}: a baseline must be a .jsonl or .csv scores file written by rescore"
        )
    try:
        turns = _jsonl(where) if suffix == ".jsonl" else _csv(where)
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise BaselineError(f"{where}: cannot read: {error}") from None
    return Baseline(os.fspath(where), turns)


@dataclass(slots=True)
class EvaluatorShift:
    """One evaluator in both runs: histograms, sums and counts of computed values."""

    before: list[int] = field(default_factory=lambda: [0] * BINS)
    after: list[int] = field(default_factory=lambda: [0] * BINS)
    before_sum: float = 0.0
    after_sum: float = 0.0
    before_n: int = 0
    after_n: int = 0

    def add(self, before: float | None, after: float | None) -> None:
        """Count one turn's values (either may be missing)."""
        if before is not None:
            self.before[min(int(before * BINS), BINS - 1)] += 1
            self.before_sum += before
            self.before_n += 1
        if after is not None:
            self.after[min(int(after * BINS), BINS - 1)] += 1
            self.after_sum += after
            self.after_n += 1

    @property
    def before_mean(self) -> float | None:
        """The baseline's mean (None without values)."""
        return self.before_sum / self.before_n if self.before_n else None

    @property
    def after_mean(self) -> float | None:
        """This run's mean (None without values)."""
        return self.after_sum / self.after_n if self.after_n else None

    @property
    def difference(self) -> float | None:
        """This run's mean minus the baseline's (None unless both have values)."""
        before, after = self.before_mean, self.after_mean
        return None if before is None or after is None else after - before


@dataclass(frozen=True, slots=True)
class Change:
    """One turn whose score moved: the evaluator with the largest move, before and after."""

    delta: float
    key: _Key
    query: str | None
    evaluator: str
    before: float
    after: float


class Comparison:
    """The new run's results compared with a baseline, turn by turn as they come."""

    def __init__(self, baseline: Baseline, evaluators: Iterable[str] = (), keep: int = 20) -> None:
        self.baseline = baseline
        self.shifts: dict[str, EvaluatorShift] = {name: EvaluatorShift() for name in evaluators}
        self.matched = 0
        self.only_here = 0
        self.worse = 0
        self.better = 0
        self._seen: set[_Key] = set()
        self._keep = keep
        self._worst: list[tuple[float, int, Change]] = []
        self._best: list[tuple[float, int, Change]] = []

    def add(self, results: Iterable[TurnResult]) -> None:
        """Compare each result with its baseline turn (an `on_results` hook)."""
        for result in results:
            self._add(result)

    def _add(self, result: TurnResult) -> None:
        """Compare one turn."""
        key = result.key
        old = self.baseline.turns.get(key)
        self._seen.add(key)
        values = result.values()
        if old is None:
            self.only_here += 1
            for name, value in values.items():
                self.shifts.setdefault(name, EvaluatorShift()).add(None, value)
            return
        self.matched += 1
        drop: Change | None = None
        rise: Change | None = None
        for name in dict.fromkeys([*values, *old[1]]):
            before, after = old[1].get(name), values.get(name)
            self.shifts.setdefault(name, EvaluatorShift()).add(before, after)
            if before is None or after is None or abs(after - before) < _EPSILON:
                continue
            change = Change(after - before, key, result.turn.query, name, before, after)
            if change.delta < 0 and (drop is None or change.delta < drop.delta):
                drop = change
            if change.delta > 0 and (rise is None or change.delta > rise.delta):
                rise = change
        if drop is not None:
            self.worse += 1
            self._push(self._worst, -drop.delta, drop)
        elif rise is not None:
            self.better += 1
            self._push(self._best, rise.delta, rise)

    def _push(self, heap: list[tuple[float, int, Change]], size: float, change: Change) -> None:
        """Keep the `keep` largest changes in `heap` (a min-heap on size)."""
        heapq.heappush(heap, (size, self.matched, change))
        if len(heap) > self._keep:
            heapq.heappop(heap)

    @property
    def only_baseline(self) -> int:
        """Baseline turns this run did not score."""
        return len(self.baseline.turns.keys() - self._seen)

    def worsened(self) -> list[Change]:
        """The turns that got worse, largest drop first (at most `keep`)."""
        return [change for _, _, change in sorted(self._worst, key=lambda i: (-i[0], i[1]))]

    def improved(self) -> list[Change]:
        """The turns that got better (and none of their scores worse), largest rise first."""
        return [change for _, _, change in sorted(self._best, key=lambda i: (-i[0], i[1]))]

    def lines(self, shown: int = 3) -> list[str]:
        """A few terminal lines: per-evaluator means and difference, counts, the worst drops."""
        out = [
            f"compared with {self.baseline.path}: {self.matched} turns in both runs "
            f"({self.worse} worse, {self.better} better), {self.only_here} only in this run, "
            f"{self.only_baseline} only in the baseline"
        ]
        for name, shift in self.shifts.items():
            before, after, diff = shift.before_mean, shift.after_mean, shift.difference
            if before is None and after is None:
                continue
            shown_diff = "" if diff is None else f" ({diff:+.3f})"
            out.append(f"  {name}: {_mean(before)} -> {_mean(after)}{shown_diff}")
        for change in self.worsened()[:shown]:
            out.append(
                f"  worse: {change.evaluator} {change.before:.3f} -> {change.after:.3f} "
                f"trace {change.key[0]} ({_short(change.query)})"
            )
        return out


def _mean(value: float | None) -> str:
    """A mean for a terminal line ("–" when there is none)."""
    return "–" if value is None else f"{value:.3f}"


def _short(text: str | None, limit: int = 50) -> str:
    """A query cut for one terminal line."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
