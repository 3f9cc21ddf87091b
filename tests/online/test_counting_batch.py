"""The counting batch processors: what they were handed is what a guard counts as not exported
until the endpoint accepts it (the numbers behind shutdown's "N spans not exported")."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind
from opentelemetry.util.types import Attributes

from groundwire.exporters import ExportGuard
from groundwire.exporters._counting import (
    CountingBatchLogRecordProcessor,
    CountingBatchSpanProcessor,
    counting_batch,
)
from groundwire.exporters._providers import guard_exporter

_HOLD = {"schedule_delay_millis": 600_000}
"""Batch options that keep everything queued until a flush."""


class _RecordOnly(Sampler):
    """Records every span but samples none: such spans reach `on_end` yet are never exported."""

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: object = None,
    ) -> SamplingResult:
        """Record only."""
        return SamplingResult(Decision.RECORD_ONLY)

    def get_description(self) -> str:
        """The sampler's name."""
        return "RecordOnly"


def _guarded(signal: str, inner: object) -> tuple[object, ExportGuard]:
    """`inner` behind a guard with no address (every result counts, nothing is probed)."""
    guard = ExportGuard(f"{signal} exporter", None)
    return guard_exporter(signal, inner, guard), guard


def test_log_records_handed_over_are_unsent_until_exported() -> None:
    """Each record given to the log processor counts as unsent until the exporter sent it."""
    inner = InMemoryLogRecordExporter()
    exporter, guard = _guarded("logs", inner)
    guards: list[ExportGuard] = []
    batch = counting_batch(CountingBatchLogRecordProcessor, exporter, guard, guards, **_HOLD)
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(batch)
    logger = provider.get_logger("test")
    for number in range(3):
        logger.emit(body=f"record {number}")
    assert guards == [guard]
    assert batch.given == 3 and guard.unsent() == 3
    assert provider.force_flush(5_000)
    assert len(inner.get_finished_logs()) == 3 and guard.unsent() == 0
    provider.shutdown()


def test_sampled_spans_are_counted_and_record_only_ones_are_not() -> None:
    """Only sampled spans are exported, so only they count; the rest is never 'not exported'."""
    for sampler, expected in ((ALWAYS_ON, 2), (_RecordOnly(), 0)):
        inner = InMemorySpanExporter()
        exporter, guard = _guarded("traces", inner)
        batch = counting_batch(CountingBatchSpanProcessor, exporter, guard, **_HOLD)
        provider = TracerProvider(sampler=sampler, shutdown_on_exit=False)
        provider.add_span_processor(batch)
        for name in ("a", "b"):
            provider.get_tracer("test").start_span(name).end()
        assert batch.given == expected and guard.unsent() == expected
        assert provider.force_flush(5_000)
        assert len(inner.get_finished_spans()) == expected and guard.unsent() == 0
        provider.shutdown()


@pytest.mark.parametrize("kind", [CountingBatchSpanProcessor, CountingBatchLogRecordProcessor])
def test_batch_options_reach_the_sdk_processor(kind: type) -> None:
    """Options go to the SDK's processor, whose own checks apply (batch larger than queue)."""
    exporter, guard = _guarded("traces" if kind is CountingBatchSpanProcessor else "logs", None)
    with pytest.raises(ValueError, match="max_export_batch_size"):
        counting_batch(kind, exporter, guard, max_queue_size=1, max_export_batch_size=2)
