"""Spans on a controlled clock, so the start/end order of hand-built spans is exact."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.trace import Span, TracerProvider


class ClockedSpans:
    """Real SDK spans from `provider` whose timestamps step 10 ns at every start and end."""

    def __init__(self, provider: TracerProvider, scope: str, clock: int) -> None:
        self.provider = provider
        self.tracer = provider.get_tracer(scope)
        self.clock = clock

    @contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[Span]:
        """A span from now until the block exits (attributes set in the block land before end)."""
        self.clock += 10
        with self.tracer.start_as_current_span(
            name, start_time=self.clock, attributes=attributes, end_on_exit=False
        ) as span:
            yield span  # type: ignore[misc]
        self.clock += 10
        span.end(end_time=self.clock)
