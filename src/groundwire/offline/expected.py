"""Gold answers for eRAG, joined to recorded turns by trace id or by query.

```python
gold = ExpectedAnswers.load("gold.jsonl")
turn = gold.attach(turn)  # a copy with `expected` set, when the file has an answer for it
```

A file is JSON lines, a JSON array, or CSV, one entry per question. Each entry has `expected`
(a string or a list of strings; `answers`, `answer` and `gold` are accepted too) and `trace_id`
and/or `query`. A turn takes the entry with its trace id when there is one, else the entry with
its query (compared with whitespace collapsed and case folded). In CSV, several gold answers in
one cell are separated by `|`.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from groundwire._jsonlines import json_lines
from groundwire._types import RagTurn

__all__ = ["ExpectedAnswers", "normalise_query"]

_ANSWER_KEYS: Final = ("expected", "answers", "answer", "gold")
_SPACES: Final = re.compile(r"\s+")


def normalise_query(query: str) -> str:
    """The query as compared for joining: whitespace collapsed, case folded, trimmed."""
    return _SPACES.sub(" ", query).strip().casefold()


def _answers(entry: Mapping[str, Any], where: str, csv_cell: bool) -> tuple[str, ...]:
    """The entry's gold answers, from the first answer key present; ValueError naming `where`."""
    for key in _ANSWER_KEYS:
        value = entry.get(key)
        if value is None or value == "":
            continue
        if isinstance(value, str):
            parts = value.split("|") if csv_cell else [value]
            return tuple(part.strip() for part in parts if part.strip())
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(value)
        raise ValueError(f"{where}: {key!r} must be a string or a list of strings, got {value!r}")
    raise ValueError(f"{where}: no gold answer (expected one of the keys {list(_ANSWER_KEYS)})")


class ExpectedAnswers:
    """Gold answers by trace id and by normalised query."""

    def __init__(self) -> None:
        self.by_trace: dict[str, tuple[str, ...]] = {}
        self.by_query: dict[str, tuple[str, ...]] = {}
        self.matched = 0
        """Turns given answers by `attach`."""

    def __len__(self) -> int:
        return len(self.by_trace) + len(self.by_query)

    def add(self, entry: Mapping[str, Any], where: str, *, csv_cell: bool = False) -> None:
        """Add one entry; ValueError names `where` when it has no answer or no key to join on."""
        if not isinstance(entry, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(entry).__name__}")
        answers = _answers(entry, where, csv_cell)
        trace_id = entry.get("trace_id") or entry.get("traceId")
        query = entry.get("query") or entry.get("question")
        if not trace_id and not query:
            raise ValueError(f"{where}: needs 'trace_id' or 'query' to join on")
        if trace_id:
            self.by_trace[str(trace_id).lower()] = answers
        if query:
            self.by_query[normalise_query(str(query))] = answers

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ExpectedAnswers:
        """Read a JSON-lines, JSON-array or CSV file; errors name the file and line."""
        file_path = Path(path)
        gold = cls()
        for where, entry, csv_cell in _entries(file_path):
            gold.add(entry, where, csv_cell=csv_cell)
        if not len(gold):
            raise ValueError(f"{file_path}: no gold answers found")
        return gold

    def lookup(self, turn: RagTurn) -> tuple[str, ...] | None:
        """The gold answers for a turn, by trace id first, then by query."""
        if turn.trace_id and turn.trace_id in self.by_trace:
            return self.by_trace[turn.trace_id]
        return self.by_query.get(normalise_query(turn.query))

    def attach(self, turn: RagTurn) -> RagTurn:
        """The turn with `expected` set from the file (unchanged when the file has none for it)."""
        answers = self.lookup(turn)
        if answers is None:
            return turn
        self.matched += 1
        return turn.model_copy(update={"expected": answers})


def _entries(path: Path) -> Iterator[tuple[str, Any, bool]]:
    """(where, entry, is_csv) for each entry of a JSONL, JSON-array or CSV file."""
    with path.open(encoding="utf-8-sig", newline="") as file:
        head = file.read(1)
        while head and head.isspace():
            head = file.read(1)
        file.seek(0)
        if path.suffix.lower() == ".csv" or head not in ("{", "["):
            reader = csv.DictReader(file)
            for number, row in enumerate(reader, start=2):
                yield f"{path}:{number}", row, True
            return
        if head == "[":
            try:
                items = json.load(file)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
            for index, item in enumerate(items):
                yield f"{path}[{index}]", item, False
            return
        for where, item in json_lines(file, path):
            yield where, item, False
