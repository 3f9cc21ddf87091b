"""LangChain, scored online: every answer of a RAG chain is scored as it runs, sent over OTLP.

What it shows:
- a LangChain RAG chain (LCEL: retriever | prompt | chat model | parser) left unchanged;
- one `groundwire.configure(...)` call that instruments LangChain (the `groundwire-langchain`
  integration), scores each turn with `quoted_spans` inline (on the turn's span, in the app's
  thread) and `quote_verification` in the background, and exports spans, score events and metrics
  over OTLP/HTTP to a collector;
- what the collector receives: the turn spans with `gen_ai.evaluation.result` events, evaluation
  spans under the turns, and the `groundwire.evaluation.score` histogram.

No network, server or key: the collector is `groundwire.testing.OtlpHttpReceiver` on loopback
and the chat model is the demo's offline stand-in (not an LLM: it quotes, and sometimes
misquotes, its sources). To use your own collector, set `OTEL_EXPORTER_OTLP_ENDPOINT` and drop
the receiver; to use a real model, swap in any LangChain chat model.

Run from the repository root:

    .venv/bin/python examples/langchain_online.py
"""

from __future__ import annotations

import os

from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

import groundwire
from groundwire.demo.app import CorpusRetriever, OfflineStandInChatModel
from groundwire.testing import OtlpHttpReceiver

QUESTIONS = (
    "Does the library charge late fees?",
    "For how long may books be borrowed?",
    "What was the library in 1887?",
)
PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from these sources only, quoting them.\n\nSources:\n{context}"),
        ("human", "{question}"),
    ]
)


def format_docs(documents: list[Document]) -> str:
    """Number the retrieved paragraphs for the prompt: `[1] text`."""
    return "\n".join(
        f"[{i}] {' '.join(d.page_content.split())}" for i, d in enumerate(documents, 1)
    )


def main() -> None:
    """Run the chain on three questions with online evaluation, then show what was exported."""
    retriever = CorpusRetriever(k=2)
    model = OfflineStandInChatModel(seed=2)  # offline stand-in, deterministic
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | model
        | StrOutputParser()
    )

    with OtlpHttpReceiver() as collector:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
        online = groundwire.configure(
            service_name="library-helpdesk",
            evaluators=["quoted_spans", "quote_verification"],
            inline=["quoted_spans"],
            instrument=["langchain"],
        )
        print(f"instrumented: {online.instrumented}; exporting to {collector.endpoint}")
        for question in QUESTIONS:
            answer = chain.invoke(question)
            print(f"\nQ: {question}\nA: {answer}")
        groundwire.shutdown()  # drains the evaluations and flushes the exporters

        received = collector.spans()
        points = collector.metric_points("groundwire.evaluation.score")

    questions = {
        s.trace_id: s.attributes.get("input.value") for s in received if not s.parent_span_id
    }
    scores: dict[str, dict[str, float | None]] = {}
    for span in received:
        for event in span.events:
            if event.name == "gen_ai.evaluation.result":
                name = event.attributes["gen_ai.evaluation.name"]
                value = event.attributes.get("gen_ai.evaluation.score.value")
                scores.setdefault(span.trace_id, {})[name] = value
    carriers = [s for s in received if s.attributes.get("openinference.span.kind") == "EVALUATOR"]

    print(f"\nthe collector received {len(received)} spans; scores by question:")
    for trace_id, by_name in scores.items():
        shown = ", ".join(f"{name}={value}" for name, value in sorted(by_name.items()))
        print(f"  {questions.get(trace_id)}  ->  {shown}")
    print(f"evaluation spans (background results, children of the turn spans): {len(carriers)}")
    counted = sum(point.count or 0 for point in points)
    print(f"groundwire.evaluation.score histogram: {counted} scores recorded")


if __name__ == "__main__":
    main()
