"""Batch processors that count what they were handed, tied to their exporter's guard.

An `ExportGuard` knows what its exporter sent; to say at shutdown how many items never reached
the endpoint, it also needs how many the batch processor was handed (given minus exported).
Every builder of groundwire's own providers (`build_tracer_provider`, `build_logger_provider`,
`build_otlp_providers`) gets its span and log record processors from `counting_batch`, so that
link is made one way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from groundwire.exporters._guard import ExportGuard

__all__ = [
    "Counting",
    "CountingBatchLogRecordProcessor",
    "CountingBatchSpanProcessor",
    "count_into",
    "counting_batch",
]


class CountingBatchSpanProcessor(BatchSpanProcessor):
    """The SDK's BatchSpanProcessor, counting the sampled spans it was given (`given`), so that
    shutdown can say how many never reached the endpoint (given minus exported)."""

    def __init__(self, exporter: SpanExporter, **options: object) -> None:
        super().__init__(exporter, **options)  # type: ignore[arg-type]
        self.given = 0

    def on_end(self, span: ReadableSpan) -> None:
        """Count the span (when it will be exported), then queue it as the SDK does."""
        context = span.context
        if context is not None and context.trace_flags.sampled:
            self.given += 1
        super().on_end(span)


class CountingBatchLogRecordProcessor(BatchLogRecordProcessor):
    """The SDK's BatchLogRecordProcessor, counting the records it was given (`given`), as for
    spans."""

    def __init__(self, exporter: Any, **options: Any) -> None:
        super().__init__(exporter, **options)
        self.given = 0

    def on_emit(self, log_record: Any) -> None:
        """Count the record, then queue it as the SDK does."""
        self.given += 1
        super().on_emit(log_record)


def count_into(
    guard: ExportGuard | None, given: Callable[[], int], guards: list[ExportGuard] | None
) -> None:
    """Let `guard` (when there is one) know how many items its exporter was given, so shutdown
    can say how many never arrived, and list it in `guards`."""
    if guard is None:
        return
    guard.given = given
    if guards is not None:
        guards.append(guard)


Counting = TypeVar("Counting", CountingBatchSpanProcessor, CountingBatchLogRecordProcessor)
"""One of the two counting batch processors."""


def counting_batch(
    kind: type[Counting],
    exporter: Any,
    guard: ExportGuard | None,
    guards: list[ExportGuard] | None = None,
    **options: Any,
) -> Counting:
    """A counting batch processor of `kind` over `exporter` (`options` go to the SDK's
    processor), its count given to `guard`, and `guard` listed in `guards`."""
    batch = kind(exporter, **options)
    count_into(guard, lambda: batch.given, guards)
    return batch
