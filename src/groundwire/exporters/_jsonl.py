"""Span, metric and log exporters writing OTLP/JSON lines, the OpenTelemetry Collector file format.

Each export appends one line: an `ExportTraceServiceRequest`, `ExportMetricsServiceRequest` or
`ExportLogsServiceRequest` as OTLP/JSON. The three may share one file (readers tell them apart by
the top-level `resourceSpans` / `resourceMetrics` / `resourceLogs` key). Writes run with
instrumentation suppressed.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    MetricExportResult,
    MetricsData,
)
from opentelemetry.sdk.metrics.view import Aggregation
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from groundwire.exporters._otlp_json import to_otlp_json

if TYPE_CHECKING:
    from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
else:
    try:
        from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
    except ImportError:  # opentelemetry-sdk 1.37 and 1.38 used the older names
        from opentelemetry.sdk._logs.export import LogExporter as LogRecordExporter
        from opentelemetry.sdk._logs.export import LogExportResult as LogRecordExportResult

__all__ = [
    "JsonLinesFile",
    "JsonLinesLogExporter",
    "JsonLinesMetricExporter",
    "JsonLinesSpanExporter",
]

logger = logging.getLogger("groundwire.exporters")


class JsonLinesFile:
    """An append-only file of JSON lines shared by exporters; thread-safe, opened lazily."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        self._users = 0
        self._closed = False

    def acquire(self) -> JsonLinesFile:
        """Register one more exporter writing here; the file closes when the last one is done."""
        with self._lock:
            self._users += 1
        return self

    def write_line(self, line: str) -> None:
        """Append one line and flush it (the file is opened, and its folder made, on first use)."""
        with self._lock:
            if self._closed:
                raise ValueError(f"{self.path} is closed")
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")
            self._file.write(line + "\n")
            self._file.flush()

    def release(self) -> None:
        """One exporter is done; close the file when none is left."""
        with self._lock:
            self._users -= 1
            if self._users <= 0 and self._file is not None:
                self._file.close()
                self._file = None
                self._closed = True


def _open(target: str | os.PathLike[str] | JsonLinesFile) -> JsonLinesFile:
    """A shared file for `target`, registered as used by one more exporter."""
    return (target if isinstance(target, JsonLinesFile) else JsonLinesFile(target)).acquire()


def _suppressed_write(file: JsonLinesFile, line: str) -> bool:
    """Write one line with instrumentation suppressed; False (logged) on failure."""
    token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
    try:
        file.write_line(line)
    except (OSError, ValueError) as error:
        logger.warning("could not write telemetry to %s: %s", file.path, error)
        return False
    finally:
        detach(token)
    return True


class _SharedFileWriter:
    """What every JSON-lines exporter shares: its reference to the shared file, appending one
    OTLP/JSON line per batch, and closing its reference once (the file closes with the last)."""

    _file: JsonLinesFile
    _shut_down: bool

    @property
    def path(self) -> Path:
        """Where the lines go."""
        return self._file.path

    def _append(self, request: Any) -> bool:
        """Write `request` as one OTLP/JSON line; False when shut down or the write failed."""
        if self._shut_down:
            return False
        return _suppressed_write(self._file, to_otlp_json(request))

    def _release(self) -> None:
        """Give up this exporter's reference to the file (once)."""
        if not self._shut_down:
            self._shut_down = True
            self._file.release()


class _BatchFileWriter(_SharedFileWriter):
    """Span and log record exporters: each non-empty batch is one line of the signal's request."""

    encode: Callable[[Sequence[Any]], Any]
    """The batch as the signal's OTLP export request."""
    results: tuple[Any, Any] = (None, None)
    """The signal's success and failure results."""

    def __init__(self, path: str | os.PathLike[str] | JsonLinesFile) -> None:
        self._file = _open(path)
        self._shut_down = False

    def export(self, batch: Sequence[Any]) -> Any:
        """Append the batch; FAILURE (logged) when the file cannot be written."""
        if batch and not self._shut_down:
            ok = self._append(type(self).encode(batch))
        else:
            ok = not self._shut_down
        success, failure = self.results
        return success if ok else failure

    def shutdown(self) -> None:
        """Close the file once every exporter sharing it has shut down."""
        self._release()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Lines are flushed as they are written."""
        return True


class JsonLinesSpanExporter(_BatchFileWriter, SpanExporter):
    """Writes each batch of spans as one `ExportTraceServiceRequest` OTLP/JSON line."""

    encode = staticmethod(encode_spans)
    results = (SpanExportResult.SUCCESS, SpanExportResult.FAILURE)


class JsonLinesMetricExporter(_SharedFileWriter, MetricExporter):
    """Writes each metric collection as one `ExportMetricsServiceRequest` OTLP/JSON line."""

    def __init__(
        self,
        path: str | os.PathLike[str] | JsonLinesFile,
        preferred_temporality: dict[type, AggregationTemporality] | None = None,
        preferred_aggregation: dict[type, Aggregation] | None = None,
    ) -> None:
        super().__init__(preferred_temporality, preferred_aggregation)
        self._file = _open(path)
        self._shut_down = False

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Append the collection; FAILURE (logged) when the file cannot be written."""
        if self._shut_down:
            return MetricExportResult.FAILURE
        request = encode_metrics(metrics_data)
        if not request.resource_metrics:
            return MetricExportResult.SUCCESS
        return MetricExportResult.SUCCESS if self._append(request) else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Lines are flushed as they are written."""
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Close the file once every exporter sharing it has shut down."""
        self._release()


class JsonLinesLogExporter(_BatchFileWriter, LogRecordExporter):
    """Writes each batch of log records (SDK `ReadableLogRecord`s) as one
    `ExportLogsServiceRequest` OTLP/JSON line."""

    encode = staticmethod(encode_logs)
    results = (LogRecordExportResult.SUCCESS, LogRecordExportResult.FAILURE)
