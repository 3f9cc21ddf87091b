"""The Ray engine's stages, run in Ray tasks: assemble the key-sorted traces, score (and,
when the workers write OUT, write) a batch of them. (Reading is `_ray_reads`.)

Rows travel between stages as `{"kind", "payload", "turns", "scores"}`: `kind` is `stats` (one
file's read counters, which the driver gets from the read tasks), `trace` (a trace's counters,
its turns as JSON) or `part` (the tallies of a block the workers wrote themselves: a Parquet part
file, see `_ray_parts`, or, in its `turns` column, the block's `.jsonl`/`.csv` lines, see
`_ray_lines`).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any, Final

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn, Score
from groundwire.offline._grouping import decode_fragment, merge_fragments
from groundwire.offline._pipeline import TurnCounts, split_evaluations, trace_turns
from groundwire.offline._ray_lines import LinesPlace, encode_part
from groundwire.offline._ray_parts import PartsPlace, part_tallies, write_part
from groundwire.offline._scoring import score_chunk
from groundwire.offline.expected import ExpectedAnswers

__all__ = ["SCORES", "TURNS", "TURN_COUNTERS", "assemble_blocks", "score_batch"]

TURN_COUNTERS = (
    "traces",
    "turns",
    "resumed",
    "evaluation_spans",
    "evaluation_logs",
    "duplicate_spans",
    "duplicate_turns",
    "parent_missing",
)


def assemble_blocks(
    batch: dict[str, Any],
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
) -> dict[str, list[Any]]:
    """Whole traces' key-sorted fragments (consecutive rows of one key: every fragment of a
    trace is in the batch) -> one row per trace of its turns and counters.

    One call per range of traces rather than one per trace: a call per trace (Ray Data's
    `map_groups`) cost more than assembling the trace (see docs/offline.md, "Ray").
    """
    keys, data = batch["key"], batch["data"]
    out: dict[str, list[Any]] = {"kind": [], "payload": [], "turns": []}
    start = 0
    for end in range(1, len(keys) + 1):
        if end < len(keys) and keys[end] == keys[start]:
            continue
        counters, turns = _assemble_trace(list(data[start:end]), expected, skip)
        out["kind"].append("trace")
        out["payload"].append(counters)
        out["turns"].append(turns)
        start = end
    return out


def _assemble_trace(
    data: list[bytes],
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
) -> tuple[str, bytes]:
    """One trace's fragments -> its counters (JSON) and its turns (JSON, pydantic's encoder)."""
    fragments = [decode_fragment(bytes(d)) for d in data]
    merged = merge_fragments(fragments)  # a span read twice (Collector retry) is kept once
    spans, left_out = split_evaluations(merged)
    counts = TurnCounts(
        evaluation_spans=len(left_out),
        duplicate_spans=sum(map(len, fragments)) - len(merged),
    )
    matched_before = expected.matched if expected is not None else 0
    turns = list(trace_turns(spans, counts, expected=expected, skip=skip, absent=left_out))
    counters = {
        "counts": {name: getattr(counts, name) for name in TURN_COUNTERS},
        "incomplete": counts.incomplete,
        "matched": (expected.matched - matched_before) if expected is not None else 0,
    }
    return json.dumps(counters), TURNS.dump_json(turns)


class _Scored(TypedDict):
    """One turn's scores, as they travel from a scoring actor to the driver."""

    scores: list[Score]
    durations: dict[str, float]


TURNS: Final = TypeAdapter(list[RagTurn])
"""Turns to and from JSON in pydantic's own (compiled) encoder and parser: one call per trace."""
SCORES: Final = TypeAdapter(list[_Scored])
"""A trace's turns' scores to and from JSON, likewise."""


_EVALUATORS: dict[str, list[Any]] = {}
"""In each Ray worker process: the evaluators of the run it scores for, by run id (one run)."""


def _evaluators(run: str, spec: Any) -> list[Any]:
    """The run's evaluators, built once per worker process and run (the previous run's are
    dropped): what a scoring actor held, without starting an actor process for every run."""
    found = _EVALUATORS.get(run)
    if found is None:
        _EVALUATORS.clear()
        found = _EVALUATORS[run] = list(resolve_evaluators(spec))
    return found


def score_batch(
    batch: dict[str, Any],
    run: str,
    spec: Any,
    concurrency: int,
    parts: PartsPlace | LinesPlace | None = None,
) -> dict[str, Any]:
    """In a Ray scoring task (`_ray_scoring.score_batches`): score the batch's turns in one chunk.

    Without `parts`, a `scores` column is added and the turns column passes through as it came
    (the driver reads the turns from it: a turn is encoded once, by the task that assembled it).
    With `parts`, the task writes the rows itself (a Parquet part file, `write_part`, or the
    `.jsonl`/`.csv` lines, `encode_part`) and hands back only counters: the files' read
    counters, the traces' counters summed, and the part's tallies (with its lines).
    """
    evaluators = _evaluators(run, spec)
    per_row = [TURNS.validate_json(bytes(turns)) for turns in batch["turns"]]
    done = score_chunk([t for row in per_row for t in row], evaluators, concurrency)
    if isinstance(parts, LinesPlace):
        tallies = part_tallies(done, parts.evaluators)
        return _counters_only(batch, tallies, encode_part(parts, done))
    if parts is not None:
        return _counters_only(batch, write_part(parts, done))
    results = iter(done)
    scores: list[bytes] = []
    for row in per_row:
        scored = [next(results) for _ in row]
        scores.append(
            SCORES.dump_json(
                [{"scores": list(r.scores.values()), "durations": r.durations} for r in scored]
            )
        )
    return {
        "kind": batch["kind"],
        "payload": batch["payload"],
        "turns": batch["turns"],
        "scores": scores,
    }


def _counters_only(batch: dict[str, Any], tallies: str, lines: bytes = b"[]") -> dict[str, Any]:
    """A written batch's rows for the driver: its `stats` rows, one `trace` row of the traces'
    counters summed, and the `part` row of its tallies (no turn, no score; the encoded `lines`
    in its `turns` column when the driver writes them)."""
    kinds: list[str] = []
    payloads: list[str] = []
    total: dict[str, Any] = {"counts": {}, "incomplete": {}, "matched": 0}
    for kind, payload in zip(batch["kind"], batch["payload"], strict=True):
        if kind != "trace":
            kinds.append(str(kind))
            payloads.append(str(payload))
            continue
        row = json.loads(payload)
        for group in ("counts", "incomplete"):
            for name, number in row[group].items():
                total[group][name] = total[group].get(name, 0) + number
        total["matched"] += row["matched"]
    kinds += ["trace", "part"]
    payloads += [json.dumps(total), tallies]
    return {
        "kind": kinds,
        "payload": payloads,
        "turns": [b"[]"] * (len(kinds) - 1) + [lines],
        "scores": [b"[]"] * len(kinds),
    }
