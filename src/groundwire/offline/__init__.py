"""Offline re-scoring of recorded traces: readers, the `rescore` pipeline, output writers.

```python
from groundwire.offline import rescore

summary = rescore(
    ["traces.jsonl.gz"], ["quoted_spans", "quote_verification"], "scores.jsonl", workers=2
)
```

Traces are read from OTLP/JSON lines (the Collector's file exporter, groundwire's own file),
OTLP protobuf files or Jaeger JSON, reassembled into turns by the same assembler as live spans,
scored, and written as .jsonl, .csv, .xlsx, .parquet or a self-contained .html report; optionally
sent back as evaluation spans and log-based result events under the original traces
(`export_otlp`); scores recorded earlier are read back with `read_recorded_results`. A bad `out`
raises `OutputPathError`, `resume=True` onto another run's output `ResumeError` (both
`ValueError`s). See docs/offline.md.
"""

from __future__ import annotations

from groundwire.offline._export import OtlpExport
from groundwire.offline._pipeline import TurnCounts, WindowOptions, iter_turns
from groundwire.offline._results import TurnResult, dumps_strict, json_safe
from groundwire.offline._resume import ResumeError
from groundwire.offline._window import TraceWindow
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import BadRecordError, Problems, ReadStats, read_spans
from groundwire.offline.recorded import RecordedResult, read_recorded_results
from groundwire.offline.rescore import (
    EvaluatorTally,
    ProgressHook,
    RescoreSummary,
    StopFlag,
    rescore,
)
from groundwire.offline.writers import OutputPathError

__all__ = [
    "BadRecordError",
    "EvaluatorTally",
    "ExpectedAnswers",
    "OtlpExport",
    "OutputPathError",
    "Problems",
    "ProgressHook",
    "ReadStats",
    "RecordedResult",
    "RescoreSummary",
    "ResumeError",
    "StopFlag",
    "TraceWindow",
    "TurnCounts",
    "TurnResult",
    "WindowOptions",
    "dumps_strict",
    "iter_turns",
    "json_safe",
    "read_recorded_results",
    "read_spans",
    "rescore",
]
