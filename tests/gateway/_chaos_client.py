"""The chaos test's app: a separate process sending a steady stream of RAG traces through the OTel
SDK's own OTLP/HTTP exporter, and writing down the ids of the spans the gateway answered 200 for.

Run as `python _chaos_client.py ENDPOINT SECONDS OUT`: it sends until SECONDS have passed or a
file `OUT.stop` appears. Each trace is one turn as the OpenInference
instrumentation records it (CHAIN root, RETRIEVER with a document, LLM with the answer). A wrapper
around the exporter appends `trace_id span_id` lines to OUT for every export that succeeded: an
export succeeds only when the gateway answered 200, so OUT is exactly what the gateway accepted.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

CONTEXT = "The Eiffel Tower was completed in 1889 for the World's Fair."
ANSWER = 'The source says "the Eiffel Tower was completed in 1889".'


class Recording(SpanExporter):
    """Export through `inner`; note the spans of each successful export in `out`."""

    def __init__(self, inner: SpanExporter, out: IO[str]) -> None:
        self.inner = inner
        self.out = out

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self.inner.export(spans)
        if result is SpanExportResult.SUCCESS:
            self.out.write(
                "".join(
                    f"{span.context.trace_id:032x} {span.context.span_id:016x}\n"
                    for span in spans
                    if span.context is not None
                )
            )
            self.out.flush()
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def main(endpoint: str, seconds: float, out_path: str) -> None:
    """Send turns for `seconds` (or until `out_path.stop` exists), then flush and stop."""
    stop = Path(out_path + ".stop")
    with open(out_path, "w", encoding="utf-8") as out:
        exporter = Recording(OTLPSpanExporter(endpoint=endpoint + "/v1/traces", timeout=2), out)
        provider = TracerProvider()
        provider.add_span_processor(
            BatchSpanProcessor(exporter, schedule_delay_millis=50, max_export_batch_size=60)
        )
        tracer = provider.get_tracer("chaos-app")
        end = time.monotonic() + seconds
        while time.monotonic() < end and not stop.exists():
            with tracer.start_as_current_span(
                "RunnableSequence",
                attributes={"openinference.span.kind": "CHAIN", "input.value": "When?"},
            ) as root:
                tracer.start_span(
                    "Retriever",
                    attributes={
                        "openinference.span.kind": "RETRIEVER",
                        "input.value": "When?",
                        "retrieval.documents.0.document.content": CONTEXT,
                    },
                ).end()
                tracer.start_span(
                    "ChatModel",
                    attributes={"openinference.span.kind": "LLM", "output.value": ANSWER},
                ).end()
                root.set_attribute("output.value", ANSWER)
            time.sleep(0.02)
        provider.shutdown()


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3])
