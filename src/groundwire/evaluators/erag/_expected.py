"""Gold answers for turns scored after the fact: load them from a file, join them by query or id.

eRAG needs `turn.expected`. A dataset run sets it directly; recorded traces do not carry it, so
the answers come from a file keyed by the question text or by the trace id:

- JSON: `{"key": ["answer", ...], ...}` (a single string is one answer);
- JSONL: one object per line, `{"query": ..., "expected": [...]}` or `{"trace_id": ..., ...}`
  (`answers` is accepted for `expected`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Literal

from groundwire._jsonlines import json_objects
from groundwire._types import RagTurn

__all__ = ["attach_expected", "load_expected"]

JoinKey = Literal["query", "trace_id"]


def _answers(value: Any, where: str) -> list[str]:
    """A record's answers as a non-empty list of strings, or an error naming `where`."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(a, str) for a in value):
        return list(value)
    raise ValueError(f"{where}: expected answers must be a string or a non-empty list of strings")


def _key(text: str) -> str:
    """A query as a join key: whitespace collapsed."""
    return " ".join(text.split())


def load_expected(path: str | PathLike[str], *, by: JoinKey = "query") -> dict[str, list[str]]:
    """Read gold answers keyed by query text (whitespace-collapsed) or trace id from JSON/JSONL.

    Errors name the file, the line (JSONL) and what was wrong.
    """
    file = Path(path)
    if file.suffix.lower() == ".json":
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{file}: not valid JSON: {error}") from error
        if not isinstance(data, dict):
            raise ValueError(f"{file}: expected a JSON object mapping each {by} to its answers")
        return {_key(k): _answers(v, f"{file}: key {k!r}") for k, v in data.items()}
    loaded: dict[str, list[str]] = {}
    for where, record in json_objects(file):
        if not isinstance(record.get(by), str):
            raise ValueError(f"{where}: each line needs a string field {by!r}")
        answers = record.get("expected", record.get("answers"))
        if answers is None:
            raise ValueError(f"{where}: no 'expected' (or 'answers') field")
        loaded[_key(record[by])] = _answers(answers, where)
    return loaded


def attach_expected(
    turns: Iterable[RagTurn],
    expected: Mapping[str, Sequence[str] | str],
    *,
    by: JoinKey = "query",
    overwrite: bool = False,
) -> Iterator[RagTurn]:
    """Yield the turns with `expected` set from `expected[turn.query]` (or `[turn.trace_id]`).

    Streams (one turn at a time). A turn with no entry, or that already has answers and
    `overwrite` is False, passes through unchanged.
    """
    table = {
        _key(k) if by == "query" else k: _answers(v, f"expected[{k!r}]")
        for k, v in expected.items()
    }
    for turn in turns:
        key = _key(turn.query) if by == "query" else turn.trace_id
        answers = table.get(key) if key is not None else None
        if answers is None or (turn.expected and not overwrite):
            yield turn
        else:
            yield turn.model_copy(update={"expected": tuple(answers)})
