"""A stand-in RAG app that fills the dashboard: scored turns sent over OTLP, no LLM needed.

    export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318
    python examples/observability/sample_app.py --turns 300

Each turn is recorded as OpenInference spans (a CHAIN root with the question and answer, a
RETRIEVER child with the documents), exactly what the LangChain and LlamaIndex integrations write,
and scored online by the deterministic evaluators `quoted_spans` and `quote_verification`. Some
answers quote their sources faithfully, some misquote them, so the score panels have a spread.
Set `GROUNDWIRE_EVALUATORS` to add judge evaluators (they need `GROUNDWIRE_JUDGE_*`).
"""

from __future__ import annotations

import argparse
import os
import random
import time

from opentelemetry import trace
from opentelemetry.trace import Tracer

import groundwire
from groundwire import semconv

DOCUMENTS = (
    "The library lends books for three weeks. Renewals are allowed twice online.",
    "Late fees are ten cents per day, capped at five dollars per item.",
    "The reading room opens at nine and closes at eight on weekdays.",
)
ANSWERS = (
    'Loans last three weeks: "The library lends books for three weeks."',
    'Fees are small: "late fees are ten cents per day, capped at five dollars per item".',
    'It says "the reading room opens at nine" on weekdays.',
    'The policy says "books can be kept for a whole year" with no fees.',
    'You can renew: "renewals are allowed three times by phone".',
)
QUERY = "How long can I keep a book, and what does the library charge?"


def record_turn(tracer: Tracer, answer: str) -> None:
    """One RAG turn as OpenInference spans: a CHAIN root with a RETRIEVER child."""
    root = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
        semconv.INPUT_VALUE: QUERY,
        semconv.OUTPUT_VALUE: answer,
    }
    with tracer.start_as_current_span("rag", attributes=root):
        retrieval: dict[str, str] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
            semconv.INPUT_VALUE: QUERY,
        }
        prefix = semconv.RETRIEVAL_DOCUMENTS_PREFIX
        for i, text in enumerate(DOCUMENTS):
            retrieval[semconv.document_attribute(prefix, i, semconv.DOCUMENT_CONTENT)] = text
            retrieval[semconv.document_attribute(prefix, i, semconv.DOCUMENT_ID)] = f"doc{i}"
        with tracer.start_as_current_span("retrieve", attributes=retrieval):
            time.sleep(0.01)


def main(argv: list[str] | None = None) -> None:
    """Record `--turns` turns, `--interval` seconds apart, then flush and shut down."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns to record (default 200)")
    parser.add_argument("--interval", type=float, default=0.5, help="seconds between turns")
    parser.add_argument("--seed", type=int, default=7, help="random seed for the answer mix")
    args = parser.parse_args(argv)
    os.environ.setdefault("OTEL_SERVICE_NAME", "library-bot")
    os.environ.setdefault("OTEL_METRIC_EXPORT_INTERVAL", "5000")  # milliseconds; default 60 s
    os.environ.setdefault(semconv.ENV_EVALUATORS, "quoted_spans,quote_verification")
    groundwire.configure(instrument=False)
    target = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "the default OTLP endpoint")
    print(  # a first line at once: the whole run takes turns x interval seconds
        f"recording {args.turns} turns, one every {args.interval:g} s "
        f"(about {args.turns * args.interval:.0f} s), sending to {target}; Ctrl-C stops",
        flush=True,
    )
    tracer = trace.get_tracer("sample-app")
    pick = random.Random(args.seed)
    for done in range(1, args.turns + 1):
        record_turn(tracer, pick.choice(ANSWERS))
        if done % 50 == 0 or done == args.turns:
            print(f"{done} of {args.turns} turns recorded", flush=True)
        time.sleep(args.interval)
    groundwire.shutdown()
    print("done: scores and metrics flushed", flush=True)


if __name__ == "__main__":
    main()
