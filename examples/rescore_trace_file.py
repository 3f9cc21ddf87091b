"""Re-score a recorded trace file offline, and send the scores back under the original traces.

What it shows:
- an app that only *traces* (no scoring at run time): the demo's LangChain RAG app instrumented
  with `LangChainInstrumentor`, its spans written by groundwire's `JsonLinesSpanExporter` as
  OTLP/JSON lines (the OpenTelemetry Collector's file-exporter layout);
- `groundwire.offline.rescore(...)` reading that file (streaming), reassembling the turns with the
  same assembler as online scoring, and writing `scores.jsonl` and a self-contained `report.html`;
- `export_otlp=`: the results sent as evaluation spans that are children of the original turn
  spans (same trace ids), so Jaeger or Tempo show them under the request even days later. The
  "collector" is `groundwire.testing.OtlpHttpReceiver` on loopback.

The same from the command line:

    groundwire rescore traces.jsonl -e quoted_spans,quote_verification -o report.html \\
        --export-otlp http://localhost:4318

No network, server or key. Run from the repository root (outputs go to
./groundwire-out/rescore-example/):

    .venv/bin/python examples/rescore_trace_file.py                     # record, then re-score
    .venv/bin/python examples/rescore_trace_file.py my-traces.jsonl.gz  # re-score your files
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from groundwire.demo import QUESTIONS
from groundwire.demo.app import OfflineStandInChatModel, build_chain
from groundwire.exporters import JsonLinesSpanExporter
from groundwire.offline import rescore
from groundwire.testing import OtlpHttpReceiver
from groundwire_langchain import LangChainInstrumentor

OUT = Path("groundwire-out") / "rescore-example"
EVALUATORS = ["quoted_spans", "quote_verification"]


def record(path: Path) -> None:
    """Run the demo app on four questions with tracing only, writing OTLP/JSON lines to `path`."""
    path.unlink(missing_ok=True)
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(JsonLinesSpanExporter(path)))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        chain = build_chain(OfflineStandInChatModel(seed=2))
        for question in QUESTIONS[:4]:
            chain.invoke(question)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def turn_span_ids(path: Path) -> set[str]:
    """Span ids of the root spans in an OTLP/JSON-lines file (the turns' spans)."""
    ids: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        for resource_spans in json.loads(line).get("resourceSpans", ()):
            for scope_spans in resource_spans["scopeSpans"]:
                ids.update(s["spanId"] for s in scope_spans["spans"] if not s.get("parentSpanId"))
    return ids


def main(paths: list[Path]) -> None:
    """Record a trace file unless given some, re-score it into .jsonl and .html, export spans."""
    OUT.mkdir(parents=True, exist_ok=True)
    if not paths:
        paths = [OUT / "traces.jsonl"]
        record(paths[0])
        print(f"recorded 4 traced questions to {paths[0]}")

    with OtlpHttpReceiver() as collector:
        summary = rescore(paths, EVALUATORS, OUT / "scores.jsonl", export_otlp=collector.endpoint)
        collector.wait_for(lambda r: len(r.spans()) >= summary.exported_spans, timeout_s=10)
        exported = collector.spans()
    rescore(paths, EVALUATORS, OUT / "report.html")

    print("\n".join(summary.lines()))
    for name, mean in summary.means().items():
        print(f"mean {name}: {'n/a' if mean is None else f'{mean:.3f}'}")

    records = [json.loads(line) for line in (OUT / "scores.jsonl").read_text().splitlines()]
    flagged = [r for r in records if r["scores"]["quote_verification"] == 0.0]
    print(f"\n{len(flagged)} turn(s) quote something their sources do not say:")
    for record_ in flagged:
        quotes = record_["details"]["quote_verification"]["details"]["quotes"]
        print(f"  {record_['query']}  ->  \u201c{quotes[0]['quote']}\u201d")

    parents = {span.parent_span_id for span in exported}
    if paths == [OUT / "traces.jsonl"]:
        under = len(parents & turn_span_ids(paths[0]))
        print(
            f"\nexported {len(exported)} evaluation spans; {under} hang under original turn spans"
        )
    else:
        print(f"\nexported {len(exported)} evaluation spans")
    print(f"files: {OUT / 'scores.jsonl'}, {OUT / 'report.html'}")


if __name__ == "__main__":
    main([Path(arg) for arg in sys.argv[1:]])
