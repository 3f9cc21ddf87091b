"""Evaluation results kept by trace, as OTLP requests, for the persistent queue (`queue_dir`).

With a persistent queue the scoring process does not export its carrier spans and result log
records itself: a crash between exporting them and recording the trace as scored would score the
trace again after the restart and double its results downstream. Instead its tracer and logger
providers export to `ResultCapture`'s two in-memory exporters (still behind the counting,
guarded processors every groundwire provider has), which keep what they are given by trace id.
When the scorer reports traces as scored, `take` encodes their spans and log records as
protobuf `ExportTraceServiceRequest` / `ExportLogsServiceRequest` bytes with the SDK's own OTLP
encoders; the gateway commits those requests to the queue in the same transaction that records
the traces as scored, and its forwarder sends them like any accepted request. A result is then
either committed with its scored mark or lost with it (and the trace scored again): never both.

A trace is reported only once each of its turns is finished (`Scorer.turn_finished`), so its
results are here by then; results that name no trace, or whose trace was reported before they
arrived, go out with the next report.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

if TYPE_CHECKING:
    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
else:
    try:
        from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
    except ImportError:  # opentelemetry-sdk 1.37 and 1.38 used the older names
        from opentelemetry.sdk._logs.export import LogExporter as LogRecordExporter
        from opentelemetry.sdk._logs.export import LogExportResult as LogRecordExportResult

__all__ = ["ResultCapture", "ResultRequest"]

_REMEMBER: Final = 100_000
"""Reported trace ids remembered, to send a result that comes after its trace's report."""
_NO_TRACE: Final = ""
_PER_REQUEST: Final = 512
"""Spans or log records per request (a few hundred KB): a report after a long stall, or the last
one at shutdown, stays well under the downstream's request limit (the Collector's: 4 MiB)."""


class ResultRequest(NamedTuple):
    """One OTLP request of results: its signal (`traces`, `logs`), item count, protobuf bytes."""

    signal: str
    items: int
    body: bytes


class _Kept:
    """What one signal's exporter was given, by trace id (hex)."""

    def __init__(self) -> None:
        self.by_trace: dict[str, list[Any]] = {}

    def add(self, trace_id: str, item: Any) -> None:
        self.by_trace.setdefault(trace_id, []).append(item)

    def pop(self, trace_ids: Iterable[str]) -> list[Any]:
        out: list[Any] = []
        for trace_id in trace_ids:
            out.extend(self.by_trace.pop(trace_id, ()))
        return out


class ResultCapture:
    """Two exporters keeping result spans and log records by trace; `take` encodes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._spans = _Kept()
        self._logs = _Kept()
        self._reported: OrderedDict[str, None] = OrderedDict()
        self.span_exporter = _SpanCapture(self)
        self.log_exporter = _LogCapture(self)

    def _key(self, trace_id: int | None) -> str:
        """Where a result of `trace_id` waits: its trace, or the next report (`_NO_TRACE`)
        when it has none or its trace was already reported."""
        key = f"{trace_id:032x}" if trace_id else _NO_TRACE
        return _NO_TRACE if key in self._reported else key

    def keep_spans(self, spans: Sequence[ReadableSpan]) -> None:
        """Keep exported result spans by trace."""
        with self._lock:
            for span in spans:
                context = span.context
                self._spans.add(self._key(context.trace_id if context else None), span)

    def keep_logs(self, records: Sequence[Any]) -> None:
        """Keep exported result log records (`ReadableLogRecord`, or `LogData`) by trace."""
        with self._lock:
            for record in records:
                self._logs.add(self._key(getattr(record.log_record, "trace_id", None)), record)

    @property
    def held(self) -> int:
        """Spans and log records kept, not yet taken."""
        with self._lock:
            return sum(map(len, self._spans.by_trace.values())) + sum(
                map(len, self._logs.by_trace.values())
            )

    def take(self, trace_ids: Iterable[str], *, everything: bool = False) -> list[ResultRequest]:
        """The results of `trace_ids` (and those waiting for the next report) as OTLP requests
        of at most `_PER_REQUEST` items each; these traces count as reported from now on.
        `everything`: all that is held (the last report, at shutdown)."""
        ids = [*trace_ids, _NO_TRACE]
        with self._lock:
            if everything:
                ids = list({*ids, *self._spans.by_trace, *self._logs.by_trace})
            spans, logs = self._spans.pop(ids), self._logs.pop(ids)
            for trace_id in ids:
                self._reported[trace_id] = None
            self._reported.pop(_NO_TRACE, None)
            while len(self._reported) > _REMEMBER:
                self._reported.popitem(last=False)
        out = []
        for start in range(0, len(spans), _PER_REQUEST):
            part = spans[start : start + _PER_REQUEST]
            out.append(ResultRequest("traces", len(part), encode_spans(part).SerializeToString()))
        for start in range(0, len(logs), _PER_REQUEST):
            part = logs[start : start + _PER_REQUEST]
            out.append(ResultRequest("logs", len(part), encode_logs(part).SerializeToString()))
        return out


class _Keeper:
    """What both capturing exporters share: they keep, never send, and have nothing to close."""

    def __init__(self, capture: ResultCapture) -> None:
        self._capture = capture

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


class _SpanCapture(_Keeper, SpanExporter):
    """The scoring process's span exporter with a persistent queue."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._capture.keep_spans(spans)
        return SpanExportResult.SUCCESS


class _LogCapture(_Keeper, LogRecordExporter):
    """The scoring process's log record exporter with a persistent queue."""

    def export(self, batch: Sequence[Any]) -> Any:
        self._capture.keep_logs(batch)
        return LogRecordExportResult.SUCCESS
