"""Human labels for `groundwire calibrate`: read from CSV, JSON lines or parquet, and checked.

A labels file has one row per (turn, evaluator, annotator): `trace_id` and/or `span_id` name
the turn, `evaluator` the evaluator it grades, `label` the human's verdict, and optionally
`annotator` who gave it. Accepted labels:

* `0`, `1`, `2`: ordinal (not, partly, fully), when any label of that evaluator is 2;
* `0`/`1`, `pass`/`fail`, `true`/`false` (any case, or JSON booleans): binary;
* a number in [0, 1] that is not 0 or 1: continuous.

Each evaluator's labels share one scale, decided from all of them. Anything else is a
`LabelsError` naming the file, line and field, so a team can fix its file in one go.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from groundwire._jsonlines import json_objects

__all__ = [
    "LABEL_COLUMNS",
    "Label",
    "LabelSet",
    "LabelsError",
    "Scale",
    "parquet_table",
    "parse_label",
    "read_labels",
    "scale_of",
]

Scale = Literal["binary", "ordinal", "continuous"]
"""How an evaluator's labels are read: pass/fail, 0/1/2, or a number in [0, 1]."""

LABEL_COLUMNS: Final = ("trace_id", "span_id", "evaluator", "label", "annotator")
"""The columns a labels file may have (`trace_id` or `span_id`, `evaluator` and `label` needed)."""

_WORDS: Final = {"pass": 1.0, "fail": 0.0, "true": 1.0, "false": 0.0}
_ACCEPTED: Final = "0/1/2, pass/fail, true/false, or a number in [0, 1]"


class LabelsError(ValueError):
    """A labels file that cannot be used; the message names the file, line and field."""


@dataclass(frozen=True, slots=True)
class Label:
    """One human verdict on one turn for one evaluator."""

    trace_id: str | None
    span_id: str | None
    evaluator: str
    value: float
    """The label as a number: 0/1 (binary), 0/1/2 (ordinal) or in [0, 1] (continuous)."""
    annotator: str | None
    where: str
    """`file:line` of the row, for messages."""
    word: bool = False
    """True when written as pass/fail or true/false (so it can only be binary)."""

    @property
    def key(self) -> tuple[str, str, str]:
        """The turn and evaluator this label grades."""
        return self.trace_id or "", self.span_id or "", self.evaluator


@dataclass(frozen=True, slots=True)
class LabelSet:
    """Every label of a file, with each evaluator's scale."""

    source: str
    labels: tuple[Label, ...]
    scales: Mapping[str, Scale]

    @property
    def evaluators(self) -> list[str]:
        """The evaluators labelled, in first-seen order."""
        return list(self.scales)

    @property
    def annotators(self) -> list[str | None]:
        """The annotators, in first-seen order (None for rows that name none)."""
        return list(dict.fromkeys(label.annotator for label in self.labels))


def parse_label(raw: Any) -> tuple[float, bool] | None:
    """`(value, written_as_word)` for an accepted label, None for anything else."""
    if isinstance(raw, bool):
        return float(raw), True
    if isinstance(raw, str):
        text = raw.strip().lower()
        if text in _WORDS:
            return _WORDS[text], True
        try:
            raw = float(text)
        except ValueError:
            return None
    if isinstance(raw, int | float) and math.isfinite(raw):
        value = float(raw)
        if 0.0 <= value <= 1.0 or value == 2.0:
            return value, False
    return None


def scale_of(values: list[float], words: bool) -> Scale:
    """The scale of one evaluator's label values (callers check that they fit it)."""
    if words or all(value in (0.0, 1.0) for value in values):
        return "binary"
    if any(value == 2.0 for value in values):
        return "ordinal"
    return "continuous"


def _text(row: Mapping[str, Any], column: str) -> str | None:
    """A cell as stripped text, None when absent or empty."""
    value = row.get(column)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    return text or None


def _rows(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(`file:line`, row) for each row of a CSV, JSON lines or parquet file."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8-sig") as file:
            reader = csv.DictReader(file)
            _check_columns(path, reader.fieldnames or [])
            for row in reader:
                yield f"{path}:{reader.line_num}", row
    elif suffix in (".jsonl", ".json", ".ndjson"):
        yield from _json_rows(path)
    elif suffix == ".parquet":
        yield from _parquet_rows(path)
    else:
        raise LabelsError(f"{path}: unknown labels format {suffix!r}; use .csv, .jsonl or .parquet")


def _json_rows(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Rows of a JSON lines labels file, each with the columns a label needs."""
    for where, row in json_objects(path, LabelsError):
        _check_columns(path, list(row), where)
        yield where, row


def parquet_table(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of a parquet file (needs pyarrow, the `parquet` extra)."""
    from groundwire.offline.writers import load_pyarrow

    try:
        pa = load_pyarrow()
    except ImportError as error:
        raise LabelsError(f"{path}: {error}") from None
    try:
        table = pa.parquet.read_table(path)
    except Exception as error:  # pyarrow raises its own types for damaged files
        raise LabelsError(f"{path}: not a readable parquet file: {error}") from None
    return list(table.column_names), list(table.to_pylist())


def _parquet_rows(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Rows of a parquet file."""
    columns, rows = parquet_table(path)
    _check_columns(path, columns)
    for number, row in enumerate(rows, start=1):
        yield f"{path}:row {number}", row


def _phoenix_rows(url: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Human span annotations of a Phoenix project (`phoenix://HOST:PORT/PROJECT`) as rows;
    of an annotation's label and score, the label when it is one, else the score."""
    try:
        from groundwire.phoenix import PhoenixError, human_annotations, parse_phoenix_url
    except ImportError as error:
        raise LabelsError(
            f"{url}: reading Phoenix needs httpx (pip install 'groundwire[phoenix]'): {error}"
        ) from None
    try:
        target = parse_phoenix_url(url)
        rows = human_annotations(target)
    except (ValueError, PhoenixError) as error:
        raise LabelsError(f"--labels {url}: {error}") from None
    if not rows:
        raise LabelsError(f"{url}: no human (annotator kind HUMAN) span annotations in the project")
    for row in rows:
        label = row["label"]
        if parse_label(label) is None and row["score"] is not None:
            label = row["score"]
        yield row["where"], {**row, "label": label}


def _check_columns(path: Path, columns: Sequence[str], where: str | None = None) -> None:
    """The needed columns are there: `evaluator`, `label`, and `trace_id` or `span_id`."""
    missing = [name for name in ("evaluator", "label") if name not in columns]
    if "trace_id" not in columns and "span_id" not in columns:
        missing.insert(0, "trace_id (or span_id)")
    if missing:
        found = ", ".join(columns) or "none"
        raise LabelsError(
            f"{where or path}: missing column(s) {', '.join(missing)}; found: {found} "
            f"(a labels file has {', '.join(LABEL_COLUMNS)}; docs/calibrate.md)"
        )


def _label(where: str, row: Mapping[str, Any]) -> Label:
    """One row as a `Label`, or a `LabelsError` naming the field."""
    trace_id, span_id = _text(row, "trace_id"), _text(row, "span_id")
    if trace_id is None and span_id is None:
        raise LabelsError(f"{where}: trace_id: empty; give the turn's trace_id or span_id")
    evaluator = _text(row, "evaluator")
    if evaluator is None:
        raise LabelsError(f"{where}: evaluator: empty; name the evaluator this label grades")
    parsed = parse_label(row.get("label"))
    if parsed is None:
        raise LabelsError(
            f"{where}: label: {row.get('label')!r} is not a label; expected {_ACCEPTED}"
        )
    return Label(
        trace_id=trace_id.lower() if trace_id else None,
        span_id=span_id.lower() if span_id else None,
        evaluator=evaluator,
        value=parsed[0],
        annotator=_text(row, "annotator"),
        where=where,
        word=parsed[1],
    )


def _scales(labels: list[Label]) -> dict[str, Scale]:
    """Each evaluator's scale; a label that does not fit its evaluator's scale is an error."""
    by_evaluator: dict[str, list[Label]] = {}
    for label in labels:
        by_evaluator.setdefault(label.evaluator, []).append(label)
    scales: dict[str, Scale] = {}
    for evaluator, group in by_evaluator.items():
        words = next((label for label in group if label.word), None)
        two = next((label for label in group if label.value == 2.0), None)
        part = next((label for label in group if label.value not in (0.0, 1.0, 2.0)), None)
        odd = two if two is not None else part
        if words is not None and odd is not None:
            raise LabelsError(
                f"{odd.where}: label: {odd.value:g} is outside the pass/fail scale of evaluator "
                f"{evaluator!r} ({words.where} is a pass/fail label)"
            )
        if two is not None and part is not None:
            raise LabelsError(
                f"{part.where}: label: {part.value:g} is outside the 0/1/2 scale of evaluator "
                f"{evaluator!r} ({two.where} is 2); use whole numbers 0, 1, 2 or numbers in [0, 1]"
            )
        scales[evaluator] = scale_of([label.value for label in group], words is not None)
    return scales


def read_labels(path: str | Path, *, evaluators: list[str] | None = None) -> LabelSet:
    """Read and check a labels file, or a Phoenix project's human span annotations (a string
    `phoenix://HOST:PORT/PROJECT`); `evaluators`, when given, are the only names accepted.

    Errors (`LabelsError`): a missing file or column, an empty cell, a label that is not one of
    the accepted kinds or does not fit its evaluator's scale, an unknown evaluator, the same
    turn labelled twice for one evaluator by one annotator, or no label at all.
    """
    phoenix = isinstance(path, str) and path.split("://", 1)[0].lower() in ("phoenix", "phoenixs")
    source = str(path)
    path = Path(path)
    if not phoenix and not path.is_file():
        raise LabelsError(f"{path}: labels file not found")
    labels: list[Label] = []
    seen: dict[tuple[str, str, str, str | None], str] = {}
    try:
        for where, row in _phoenix_rows(source) if phoenix else _rows(path):
            label = _label(where, row)
            if evaluators is not None and label.evaluator not in evaluators:
                known = ", ".join(evaluators) or "none"
                raise LabelsError(
                    f"{where}: evaluator: {label.evaluator!r} is not among the scored "
                    f"evaluators ({known})"
                )
            first = seen.setdefault((*label.key, label.annotator), where)
            if first != where:
                who = f" by annotator {label.annotator!r}" if label.annotator else ""
                raise LabelsError(
                    f"{where}: duplicate label{who} for this turn and evaluator "
                    f"{label.evaluator!r} (first at {first})"
                )
            labels.append(label)
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise LabelsError(f"{path}: cannot read: {error}") from None
    if not labels:
        raise LabelsError(f"{path}: no labels in the file")
    return LabelSet(source=source, labels=tuple(labels), scales=_scales(labels))
