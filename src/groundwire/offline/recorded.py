"""Scores recorded in trace files: read back what online scoring or `--export-otlp` emitted.

Results reach a file in two shapes, and both are read:

* `gen_ai.evaluation.result` **log records** (OTLP `resourceLogs`, the shape the GenAI
  conventions and OTEP 4430 prescribe): the record's trace and span id name the evaluated span;
  its attributes give the score, `groundwire.evaluation.mode` and `groundwire.evaluator.version`;
  its body (when content capture was on) gives `Score.details`.
* OpenInference **`evaluations.{i}.evaluation.*` attributes**, written in every mode on the
  evaluation carrier span (its parent is the evaluated span) and, inline, on the turn's root span.

With `events="both"` one score is in the file twice; it is returned once, the log record winning
(it carries the details). A record that is not a result, or a result without
`gen_ai.evaluation.name`, is skipped.

```python
from groundwire.offline import read_recorded_results

for result in read_recorded_results(["groundwire-telemetry.jsonl"]):
    print(result.trace_id, result.span_id, result.score.name, result.score.value)
```
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from groundwire import semconv
from groundwire._numbers import unit_score
from groundwire._types import Score
from groundwire.assembly import LogRecordData, SpanRecord
from groundwire.offline.readers import Problems, SpanBatch, TraceFormat, read_spans

__all__ = ["RecordedResult", "read_recorded_results", "results_in_batch"]

SOURCE_LOG: Final = "log"
"""`RecordedResult.source` of a result read from a log record."""
SOURCE_SPAN: Final = "span"
"""`RecordedResult.source` of a result read from a span's `evaluations.{i}.*` attributes."""

_INDEXED = re.compile(rf"^{re.escape(semconv.EVALUATIONS_PREFIX)}\.(\d+)\.(.+)$")


@dataclass(frozen=True, slots=True)
class RecordedResult:
    """One score found in a file, with the span it evaluated."""

    trace_id: str
    span_id: str
    """The evaluated span (the turn's root), not the carrier span."""
    score: Score
    mode: str | None
    """`inline`, `background`, `offline`, or None when the file does not say."""
    evaluator_version: str | None
    source: str
    """`log` (a log record) or `span` (OpenInference attributes on a span)."""
    time_ns: int

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        """What makes two sightings the same result: evaluated span, evaluator and mode."""
        return (self.trace_id, self.span_id, self.score.name, self.mode)


def _text(value: Any) -> str | None:
    """A non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _score(
    name: str,
    value: Any,
    label: Any,
    explanation: Any,
    error: str | None,
    details: Any = None,
) -> Score:
    """A Score from recorded fields: a failed one is NaN, one without a value not applicable."""
    number = unit_score(value)
    if error is not None:
        number = math.nan
    return Score(
        name=name,
        value=number,
        label=_text(label),
        explanation=_text(explanation),
        error=error,
        details=dict(details) if isinstance(details, Mapping) else {},
    )


def _from_log(record: LogRecordData) -> RecordedResult | None:
    """The result a log record carries, or None when it is not one."""
    if record.event_name != semconv.GEN_AI_EVALUATION_RESULT_EVENT:
        return None
    attributes = record.attributes
    name = _text(attributes.get(semconv.GEN_AI_EVALUATION_NAME))
    if name is None or record.trace_id is None or record.span_id is None:
        return None
    score = _score(
        name,
        attributes.get(semconv.GEN_AI_EVALUATION_SCORE_VALUE),
        attributes.get(semconv.GEN_AI_EVALUATION_SCORE_LABEL),
        attributes.get(semconv.GEN_AI_EVALUATION_EXPLANATION),
        _text(attributes.get(semconv.ERROR_TYPE)),
        record.body,
    )
    return RecordedResult(
        trace_id=record.trace_id,
        span_id=record.span_id,
        score=score,
        mode=_text(attributes.get(semconv.GROUNDWIRE_EVALUATION_MODE)),
        evaluator_version=_text(attributes.get(semconv.GROUNDWIRE_EVALUATOR_VERSION)),
        source=SOURCE_LOG,
        time_ns=record.time_ns,
    )


def _indexed(attributes: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """`evaluations.{i}.evaluation.*` attributes grouped by index."""
    grouped: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _INDEXED.match(key)
        if match:
            grouped.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return grouped


def _from_span(span: SpanRecord) -> Iterator[RecordedResult]:
    """The results in a span's OpenInference `evaluations.{i}.*` attributes."""
    grouped = _indexed(span.attributes)
    if not grouped:
        return
    carrier = span.attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.SPAN_KIND_EVALUATOR
    if carrier and span.parent_span_id is None:
        return
    target = span.parent_span_id if carrier else span.span_id
    mode = _text(span.attributes.get(semconv.GROUNDWIRE_EVALUATION_MODE)) if carrier else None
    for index in sorted(grouped):
        fields = grouped[index]
        name = _text(fields.get(semconv.EVALUATION_NAME))
        if name is None:
            continue
        label = fields.get(semconv.EVALUATION_LABEL)
        value = fields.get(semconv.EVALUATION_SCORE)
        failed = label == "error" and unit_score(value) is None
        explanation = fields.get(semconv.EVALUATION_EXPLANATION)
        score = _score(
            name,
            value,
            label,
            None if failed else explanation,
            (_text(explanation) or "error") if failed else None,
        )
        yield RecordedResult(
            trace_id=span.trace_id,
            span_id=target or span.span_id,
            score=score,
            mode=mode or (None if carrier else semconv.EVALUATION_MODE_INLINE),
            evaluator_version=None,
            source=SOURCE_SPAN,
            time_ns=span.end_time_ns or span.start_time_ns,
        )


def results_in_batch(batch: SpanBatch) -> Iterator[RecordedResult]:
    """Every result in one read record: log records first, then span attributes."""
    for record in batch.logs:
        found = _from_log(record)
        if found is not None:
            yield found
    for span in batch.spans:
        yield from _from_span(span)


def read_recorded_results(
    paths: Iterable[str | os.PathLike[str]],
    problems: Problems | None = None,
    *,
    fmt: TraceFormat | None = None,
) -> list[RecordedResult]:
    """Every recorded result in the files, each once (a log record wins over span attributes),
    in file order. Bad records go to `problems` (printed and counted by default)."""
    problems = problems if problems is not None else Problems()
    chosen: dict[tuple[str, str, str, str | None], RecordedResult] = {}
    for batch in read_spans(paths, problems, fmt=fmt):
        for result in results_in_batch(batch):
            kept = chosen.get(result.key)
            if kept is None or (kept.source == SOURCE_SPAN and result.source == SOURCE_LOG):
                chosen[result.key] = result
    return list(chosen.values())
