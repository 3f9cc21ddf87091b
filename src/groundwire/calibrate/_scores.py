"""Scored turns for `groundwire calibrate`: read from a `rescore` output, or built from turns
scored on the spot, and joined with human labels by span id or trace id.

A scores file is `rescore`'s `.jsonl` (one record per turn), `.csv` or `.parquet` (one value and
one label column per evaluator and a `details` JSON cell). Those files keep the query but not the
answer or contexts: re-score the traces (`--traces`) to see them beside each disagreement.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundwire._jsonlines import json_objects
from groundwire._numbers import unit_score
from groundwire._types import RagTurn, Score
from groundwire.calibrate._labels import (
    Label,
    LabelsError,
    LabelSet,
    parquet_table,
)

__all__ = ["Match", "ScoredTurn", "Unmatched", "join", "read_scores", "scored_turns"]


@dataclass(frozen=True, slots=True)
class ScoredTurn:
    """One turn and its evaluators' scores."""

    trace_id: str
    span_id: str
    query: str | None
    scores: Mapping[str, Score]
    answer: str | None = None
    contexts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Match:
    """A label joined with the turn it grades."""

    label: Label
    turn: ScoredTurn


@dataclass(frozen=True, slots=True)
class Unmatched:
    """A label that grades no scored turn, and why."""

    label: Label
    reason: str


@dataclass(slots=True)
class Joined:
    """The labels that found their turn, and those that did not (never dropped silently)."""

    matched: list[Match] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)


def scored_turns(
    turns: Iterable[RagTurn], scores: Iterable[Mapping[str, Score]]
) -> list[ScoredTurn]:
    """Turns scored in this process (answer and contexts kept for the disagreement list)."""
    return [
        ScoredTurn(
            trace_id=(turn.trace_id or "").lower(),
            span_id=(turn.span_id or "").lower(),
            query=turn.query,
            scores=dict(turn_scores),
            answer=turn.answer,
            contexts=tuple(turn.context_texts),
        )
        for turn, turn_scores in zip(turns, scores, strict=True)
    ]


def _score(name: str, value: Any, entry: Mapping[str, Any]) -> Score:
    """A `Score` from a file's value and details entry (a null value reads as NaN)."""
    number = unit_score(value)
    details = entry.get("details")
    usage = entry.get("usage")
    return Score(
        name=name,
        value=math.nan if number is None else number,
        label=entry.get("label") if isinstance(entry.get("label"), str) else None,
        explanation=entry.get("explanation") if isinstance(entry.get("explanation"), str) else None,
        details=details if isinstance(details, dict) else {},
        error=entry.get("error") if isinstance(entry.get("error"), str) else None,
        usage={k: v for k, v in usage.items() if isinstance(v, int)}
        if isinstance(usage, dict)
        else {},
    )


def _turn(where: str, record: Mapping[str, Any], names: Sequence[str]) -> ScoredTurn:
    """One output record (or row) as a `ScoredTurn`."""
    details = record.get("details")
    if isinstance(details, str):
        try:
            details = json.loads(details) if details else {}
        except json.JSONDecodeError:
            raise LabelsError(f"{where}: details: not JSON") from None
    details = details if isinstance(details, dict) else {}
    values = record.get("scores")
    if not isinstance(values, dict):  # .csv / .parquet: one column per evaluator
        values = {name: _number(record.get(name)) for name in names}
    scores = {
        name: _score(name, value, details.get(name) or {})
        for name, value in values.items()
        if isinstance(name, str)
    }
    return ScoredTurn(
        trace_id=str(record.get("trace_id") or "").lower(),
        span_id=str(record.get("span_id") or "").lower(),
        query=record.get("query") if isinstance(record.get("query"), str) else None,
        scores=scores,
    )


def _number(cell: Any) -> float | None:
    """A CSV or parquet cell as a number (empty: None)."""
    if cell is None or cell == "":
        return None
    try:
        return float(cell)
    except (TypeError, ValueError):
        return None


def _records(path: Path) -> Iterator[tuple[str, Mapping[str, Any], list[str]]]:
    """(`file:line`, record, evaluator names) of a `rescore` output."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        for where, record in json_objects(path, LabelsError):
            yield where, record, []
    elif suffix in (".csv", ".parquet"):
        rows = _table(path)
        fixed = ("trace_id", "span_id", "query", "details")
        names = [c for c in rows[0] if c not in fixed and not c.endswith(".label")]
        for number, row in enumerate(rows[1:], start=2):
            yield f"{path}:{number}", row, names
    else:
        raise LabelsError(f"{path}: not a scores file rescore writes; use .jsonl, .csv or .parquet")


def _table(path: Path) -> list[Any]:
    """[header, *rows as dicts] of a CSV or parquet scores file."""
    if path.suffix.lower() == ".csv":
        with path.open(newline="", encoding="utf-8") as file:
            reader = csv.DictReader(file)
            rows: list[Any] = list(reader)
            return [list(reader.fieldnames or []), *rows]
    columns, rows = parquet_table(path)
    return [columns, *rows]


def read_scores(path: str | Path) -> list[ScoredTurn]:
    """Every turn of a `rescore` output file (`.jsonl`, `.csv` or `.parquet`)."""
    path = Path(path)
    if not path.is_file():
        raise LabelsError(f"{path}: scores file not found")
    try:
        return [_turn(where, record, names) for where, record, names in _records(path)]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise LabelsError(f"{path}: cannot read: {error}") from None


def join(labels: LabelSet, turns: Sequence[ScoredTurn]) -> Joined:
    """Each label with its turn: by `span_id` when the label has one, else by `trace_id`
    (a trace with several scored turns needs the span id). Labels without a turn, or whose
    evaluator has no value on it, are kept in `unmatched` with the reason."""
    by_span = {turn.span_id: turn for turn in turns if turn.span_id}
    by_trace: dict[str, list[ScoredTurn]] = {}
    for scored in turns:
        by_trace.setdefault(scored.trace_id, []).append(scored)
    joined = Joined()
    for label in labels.labels:
        found, reason = _find(label, by_span, by_trace)
        if found is not None and label.evaluator not in found.scores:
            reason = f"the turn was not scored by {label.evaluator!r}"
        if found is None or reason:
            joined.unmatched.append(Unmatched(label, reason))
        else:
            joined.matched.append(Match(label, found))
    return joined


def _find(
    label: Label, by_span: Mapping[str, ScoredTurn], by_trace: Mapping[str, list[ScoredTurn]]
) -> tuple[ScoredTurn | None, str]:
    """The turn a label names, or None and the reason."""
    if label.span_id is not None:
        turn = by_span.get(label.span_id)
        if turn is None:
            return None, f"no scored turn has span_id {label.span_id}"
        if label.trace_id is not None and label.trace_id != turn.trace_id:
            return None, f"span {label.span_id} is in trace {turn.trace_id}, not {label.trace_id}"
        return turn, ""
    candidates = by_trace.get(label.trace_id or "", [])
    if not candidates:
        return None, f"no scored turn in trace {label.trace_id}"
    if len(candidates) > 1:
        return None, f"trace {label.trace_id} has {len(candidates)} scored turns; give span_id"
    return candidates[0], ""
