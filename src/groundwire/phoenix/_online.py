"""Online scores as Phoenix annotations: a span processor beside the app's Phoenix exporter.

```python
provider.add_span_processor(PhoenixAnnotationProcessor("http://127.0.0.1:6006"))
groundwire.configure(tracer_provider=provider, evaluators=["quoted_spans"])
```

Online scoring records its results on spans: background results on an evaluation span (kind
EVALUATOR) under the evaluated span, inline ones on the evaluated span itself, both as
OpenInference's `evaluations.{i}.evaluation.*` attributes. The processor turns each into an
annotation on the evaluated span and posts them from a daemon thread in batches, so the app is
never blocked: the queue is bounded (drops counted), and a batch Phoenix answers 404 for (the
evaluated span not stored yet: exporters and Phoenix's ingestion lag) is retried a few times.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from groundwire import semconv
from groundwire.phoenix._annotations import (
    DEFAULT_IDENTIFIER,
    JUDGE_EVALUATORS,
    AnnotationStats,
    is_verdict_attribute,
)
from groundwire.phoenix._client import PhoenixClient, PhoenixError, PhoenixNotFoundError

__all__ = ["PhoenixAnnotationProcessor"]

_FIRST: Final = semconv.evaluation_attribute(0, semconv.EVALUATION_NAME)


def _annotations(span: ReadableSpan, identifier: str) -> list[dict[str, Any]]:
    """The annotations a finished span carries (none for most spans)."""
    attributes = span.attributes or {}
    if _FIRST not in attributes or span.context is None:
        return []
    evaluator = attributes.get(semconv.OPENINFERENCE_SPAN_KIND) == semconv.SPAN_KIND_EVALUATOR
    if evaluator and span.parent is None:
        return []
    target = span.parent.span_id if evaluator and span.parent else span.context.span_id
    span_id = format(target, "016x")
    found: list[dict[str, Any]] = []
    index = 0
    while True:
        name = attributes.get(semconv.evaluation_attribute(index, semconv.EVALUATION_NAME))
        if not isinstance(name, str):
            return found
        field = {
            key: attributes.get(semconv.evaluation_attribute(index, attribute))
            for key, attribute in (
                ("score", semconv.EVALUATION_SCORE),
                ("label", semconv.EVALUATION_LABEL),
                ("explanation", semconv.EVALUATION_EXPLANATION),
            )
        }
        index += 1
        if not is_verdict_attribute(field["score"], field["label"]):
            continue  # skipped or failed: never replace an annotation a real score wrote
        if field["score"] is None and field["label"] is None:
            field["label"] = "not_applicable"
        found.append(
            {
                "span_id": span_id,
                "name": name,
                "annotator_kind": "LLM" if name in JUDGE_EVALUATORS else "CODE",
                "result": field,
                "metadata": {"source": "groundwire", "mode": "online"},
                "identifier": identifier,
            }
        )


class PhoenixAnnotationProcessor(SpanProcessor):
    """Posts the evaluation results recorded on finished spans to Phoenix as span annotations."""

    def __init__(
        self,
        phoenix: str | PhoenixClient,
        *,
        identifier: str = DEFAULT_IDENTIFIER,
        batch_size: int = 100,
        interval_s: float = 1.0,
        max_queue: int = 10_000,
        not_found_retries: int = 5,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        if not isinstance(interval_s, int | float) or interval_s <= 0:
            raise ValueError(f"interval_s must be a number > 0, got {interval_s!r}")
        self._owned = not isinstance(phoenix, PhoenixClient)
        self.client = phoenix if isinstance(phoenix, PhoenixClient) else PhoenixClient(phoenix)
        self.identifier = identifier
        self.batch_size = batch_size
        self.interval_s = float(interval_s)
        self.not_found_retries = not_found_retries
        self.stats = AnnotationStats()
        self.dropped = 0
        """Annotations dropped because the queue was full."""
        self._queue: deque[tuple[dict[str, Any], int]] = deque()
        self._max_queue = max_queue
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._stopping = False
        self._thread = threading.Thread(
            target=self._run, daemon=True, name="groundwire-phoenix-annotations"
        )
        self._thread.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue the annotations of a finished span (never blocks, never raises)."""
        try:
            found = _annotations(span, self.identifier)
        except Exception:  # a malformed span must not break the app's span pipeline
            return
        if not found:
            return
        with self._lock:
            for annotation in found:
                if len(self._queue) >= self._max_queue:
                    self.dropped += 1
                    continue
                self._queue.append((annotation, 0))
            self._idle.clear()
        if len(self._queue) >= self.batch_size:
            self._wake.set()

    def _run(self) -> None:
        """Post queued batches every `interval_s` (sooner when a batch is full)."""
        while True:
            self._wake.wait(self.interval_s)
            self._wake.clear()
            self._drain()
            if self._stopping:
                return

    def _drain(self) -> None:
        """Post everything queued now; requeue batches whose spans Phoenix does not have yet."""
        retry: list[tuple[dict[str, Any], int]] = []
        while True:
            with self._lock:
                batch = [
                    self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))
                ]
            if not batch:
                break
            try:
                self.client.post_span_annotations([annotation for annotation, _ in batch])
            except PhoenixNotFoundError as error:
                for annotation, tries in batch:
                    if tries < self.not_found_retries:
                        retry.append((annotation, tries + 1))
                    else:
                        self._failed(1, error)
            except PhoenixError as error:
                self._failed(len(batch), error)
            else:
                self.stats.sent += len(batch)
        with self._lock:
            self._queue.extend(retry)
            if not self._queue:
                self._idle.set()

    def _failed(self, count: int, error: Exception) -> None:
        """Count annotations that will not be written."""
        self.stats.failed += count
        if len(self.stats.errors) < 20:
            self.stats.errors.append(f"{count} annotations not written: {error}")

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Wait until every queued annotation was posted (or given up); False on timeout."""
        deadline = time.monotonic() + timeout_millis / 1000
        while not self._idle.is_set():
            self._wake.set()
            if self._idle.wait(min(self.interval_s, max(0.0, deadline - time.monotonic()))):
                break
            if time.monotonic() >= deadline:
                return False
        return True

    def shutdown(self) -> None:
        """Flush, stop the thread and close the client (when the processor made it)."""
        self.force_flush()
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=10)
        if self._owned:
            self.client.close()
