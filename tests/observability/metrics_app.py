"""A small instrumented RAG app for the dashboard test: real evaluators, real Prometheus endpoint.

Run as `python -m tests.observability.metrics_app`. It prints `URL <scrape url>`, waits for a
line `go` on stdin (sent once Prometheus scrapes it), then records RAG turns (OpenInference spans)
until the next line (`stop`), so Prometheus sees counters grow across scrapes. The turns are
chosen so every dashboard panel and alert has data: good, partly and badly grounded answers,
quotes found and not found, an evaluator that fails on some turns, bursts that overflow a tiny
queue (dropped), a per-evaluator sample rate (sampled_out) and a judge evaluator with no judge
configured (skipped). The groundedness judges are a scripted OpenAI-compatible server on loopback,
answering all along (no token budget: scores keep coming while Prometheus scrapes).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Tracer

import groundwire
from groundwire import RagTurn, Score, semconv
from groundwire.evaluators.citation_support import CitationSupport
from groundwire.evaluators.groundedness import ResponseGroundedness
from groundwire.evaluators.quote_verification import QuoteVerification
from groundwire.evaluators.quoted_spans import QuotedSpans
from groundwire.judges import JudgeConfig
from groundwire.testing import OpenAIServer, Reply, structured

SERVICE = "rag-app"
JUDGE_MODEL = "judge-mini"
TOKENS_PER_CALL = (120, 8)

DOCUMENTS = (
    "The library lends books for three weeks. Renewals are allowed twice online.",
    "Late fees are ten cents per day, capped at five dollars per item.",
)
GOOD = 'Loans last three weeks: "The library lends books for three weeks."'
PARTIAL = 'You may renew, and "late fees are ten cents per day" with no cap at all.'
BAD = 'The page says "books can be kept for a whole year" and "there are no fees".'
ANSWERS = (GOOD, PARTIAL, BAD, BAD)
"""Half the answers are badly grounded, so the low-score alerts have something to fire on."""


class Flaky:
    """A user evaluator that raises on badly grounded answers: the `error` outcome."""

    name = "answer_policy"

    def evaluate(self, turn: RagTurn) -> Score:
        """Score 1.0, or raise on answers that claim there are no fees."""
        if "no fees" in turn.answer:
            raise RuntimeError("policy service unavailable")
        return Score(name=self.name, value=1.0, label="compliant")


_partial_turns = itertools.count()


def _judge(request: Any) -> Reply:
    """Ratings by answer: good 2, bad 0, partial 1 or 2 (so the two judges sometimes differ)."""
    text = str(request)
    if "whole year" in text:
        rating = 0
    elif "no cap at all" in text:
        rating = 1 + next(_partial_turns) % 2
    else:
        rating = 2
    return structured({"rating": rating}, usage=TOKENS_PER_CALL, model=JUDGE_MODEL)(request)


def record_turn(tracer: Tracer, answer: str) -> None:
    """One RAG turn as OpenInference spans: a CHAIN root with a RETRIEVER child."""
    query = "How long can I keep a book, and what are the late fees?"
    root = {
        semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN,
        semconv.INPUT_VALUE: query,
        semconv.OUTPUT_VALUE: answer,
    }
    with tracer.start_as_current_span("rag", attributes=root):
        retrieval: dict[str, Any] = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
            semconv.INPUT_VALUE: query,
        }
        prefix = semconv.RETRIEVAL_DOCUMENTS_PREFIX
        for i, text in enumerate(DOCUMENTS):
            retrieval[semconv.document_attribute(prefix, i, semconv.DOCUMENT_CONTENT)] = text
            retrieval[semconv.document_attribute(prefix, i, semconv.DOCUMENT_ID)] = f"doc{i}"
        with tracer.start_as_current_span("retrieve", attributes=retrieval):
            pass


def main() -> None:
    """Serve the metrics; record turns from `go` until `stop` is read from stdin."""
    stop = threading.Event()
    judges = OpenAIServer(_judge).__enter__()
    for name in [n for n in os.environ if n.startswith(("GROUNDWIRE_JUDGE_", "OPENAI_"))]:
        del os.environ[name]  # citation_support finds no judge: its evaluations are skipped
    judge = JudgeConfig(model=JUDGE_MODEL, base_url=judges.base_url, api_key="test", cache="off")
    online = groundwire.configure(
        service_name=SERVICE,
        evaluators=[
            QuotedSpans(),
            QuoteVerification(embedder=None),
            ResponseGroundedness(judge=judge),
            CitationSupport(),
            Flaky(),
        ],
        evaluator_sample_rates={"quote_verification": 0.8},
        max_queue_size=4,
        workers=2,
        exporter="none",
        prometheus_port=0,
        instrument=False,
    )
    print("URL", online.prometheus_url, flush=True)
    sys.stdin.readline()

    def wait_for_stop() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=wait_for_stop, daemon=True).start()
    tracer = trace.get_tracer("metrics-app")
    for loop in itertools.count():
        for answer in ANSWERS:
            record_turn(tracer, answer)
        if loop % 2 == 1:  # a burst the tiny queue cannot hold: dropped evaluations
            for answer in ANSWERS * 3:
                record_turn(tracer, answer)
        if stop.wait(0.5):
            break
    groundwire.shutdown(10)
    judges.__exit__(None, None, None)
    time.sleep(0.1)


if __name__ == "__main__":
    main()
