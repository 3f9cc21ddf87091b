"""Spans to RAG turns: the one place that reads span attributes.

```python
from groundwire.assembly import turns_from_spans

turns = turns_from_spans(exporter.get_finished_spans())
```

Every source converts its spans to `SpanRecord` (the live SDK through `SpanRecord.from_readable`,
file and OTLP readers through their own parsers); `turns_from_spans` assembles a finished set,
`TurnAssembler` assembles spans as they end. The rules are in docs/assembly.md.
"""

from __future__ import annotations

from groundwire.assembly._assemble import TurnAssembler, turns_from_spans
from groundwire.assembly._diagnose import Diagnoses, TraceFamily, diagnose
from groundwire.assembly._events import has_content
from groundwire.assembly._explain import Origin, TraceReport, TurnReport, explain_traces
from groundwire.assembly._extract import answer_text, decode, query_text
from groundwire.assembly._log_record import LogRecordData
from groundwire.assembly._reader import span_kind
from groundwire.assembly._record import STATUS_CODES, SpanAttributes, SpanRecord

__all__ = [
    "STATUS_CODES",
    "Diagnoses",
    "LogRecordData",
    "Origin",
    "SpanAttributes",
    "SpanRecord",
    "TraceFamily",
    "TraceReport",
    "TurnAssembler",
    "TurnReport",
    "answer_text",
    "decode",
    "diagnose",
    "explain_traces",
    "has_content",
    "query_text",
    "span_kind",
    "turns_from_spans",
]
