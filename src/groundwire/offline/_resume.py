"""`--resume`: which turns an earlier, interrupted run already wrote to OUT."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from groundwire.offline.writers import APPENDABLE_SUFFIXES, output_suffix

__all__ = ["done_keys"]


def _cut_partial_line(path: Path) -> None:
    """Drop a trailing line without its newline (a run killed mid-write), so appends stay valid."""
    with path.open("rb+") as file:
        file.seek(0, 2)
        size = file.tell()
        if not size:
            return
        file.seek(size - 1)
        if file.read(1) == b"\n":
            return
        step = min(size, 1 << 16)
        position = size
        while position > 0:
            start = max(0, position - step)
            file.seek(start)
            chunk = file.read(position - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                file.truncate(start + cut + 1)
                return
            position = start
        file.truncate(0)


def done_keys(path: str | Path) -> set[tuple[str, str]]:
    """`(trace_id, span_id)` of every turn already in OUT (empty when OUT does not exist)."""
    out = Path(path)
    suffix = output_suffix(out)
    if suffix not in APPENDABLE_SUFFIXES:
        raise ValueError(
            f"--resume needs an output that can be appended to ({', '.join(APPENDABLE_SUFFIXES)}); "
            f"{out} is {suffix}"
        )
    if not out.exists():
        return set()
    _cut_partial_line(out)
    keys: set[tuple[str, str]] = set()
    with out.open(encoding="utf-8", newline="") as file:
        if suffix == ".csv":
            for row in csv.DictReader(file):
                if row.get("trace_id") and row.get("span_id"):
                    keys.add((row["trace_id"], row["span_id"]))
            return keys
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                keys.add((record["trace_id"], record["span_id"]))
            except (ValueError, KeyError, TypeError):
                raise ValueError(
                    f"{out}:{number}: not a groundwire result line; cannot resume from it"
                ) from None
    return keys
