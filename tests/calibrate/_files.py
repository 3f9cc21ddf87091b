"""Labels and scores files for the calibrate tests, written the way a team or `rescore` would."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


def write_labels_csv(path: Path, rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> Path:
    """A labels CSV with these columns."""
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(columns))
        writer.writeheader()
        for row in rows:
            writer.writerow(dict(row))
    return path


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """One JSON object per line."""
    path.write_text("".join(json.dumps(dict(row)) + "\n" for row in rows), encoding="utf-8")
    return path


def scores_record(
    index: int, values: Mapping[str, float | None], details: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A `rescore` .jsonl record for turn `index` (trace id t{index}, span id s{index})."""
    return {
        "trace_id": f"{index:032x}",
        "span_id": f"{index:016x}",
        "query": f"question {index}",
        "scores": dict(values),
        "details": {name: _entry(index, (details or {}).get(name, {})) for name in values},
    }


def _entry(index: int, details: Mapping[str, Any]) -> dict[str, Any]:
    """One evaluator's details entry as `rescore` writes it."""
    return {"label": None, "explanation": f"why {index}", "error": None, "details": dict(details)}


def trace_id(index: int) -> str:
    """The trace id `scores_record(index, ...)` gives its turn."""
    return f"{index:032x}"


def span_id(index: int) -> str:
    """The span id `scores_record(index, ...)` gives its turn."""
    return f"{index:016x}"
