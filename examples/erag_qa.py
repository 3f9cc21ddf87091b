"""eRAG over a small QA set: score retrieval by what each document does for the generator.

What it shows:
- a QA set (questions with gold answers) over the bundled library handbook;
- `RagTurn`s built from a LangChain retriever's ranked documents, with `expected` answers;
- the `erag` evaluator: each retrieved document *alone* goes to the generator with the question;
  a document is relevant (label 1) when that answer contains a gold answer; the labels are then
  ranked-retrieval metrics in trec_eval naming (`P_3`, `success_3`, `recip_rank`, `ndcg_cut_3`);
- why that is useful without any human relevance labels: the same documents in a worse order
  (BM25's ranking reversed) keep `P_3` but lose `recip_rank` and `ndcg_cut_3`.

No network, server or key: the generator is the demo's offline stand-in restricted to exact
quotes (a faithful extractive reader, not an LLM) behind `LangChainGenerator`. Use any LangChain
chat model, LlamaIndex LLM or `OpenAIGenerator` for real.

Run from the repository root:

    .venv/bin/python examples/erag_qa.py
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

import groundwire
from groundwire import Context, RagTurn
from groundwire.demo.app import CorpusRetriever, OfflineStandInChatModel
from groundwire.evaluators import ERAG, LangChainGenerator

QA_SET = {
    "For how long may books be borrowed?": ["three weeks"],
    "How much does printing cost in black and white?": ["ten cents a page"],
    "Who was the architect who insisted on tall windows?": ["Margaret Oyelaran"],
    "When did the Northpoint branch open in a former fish market?": ["1994"],
    "How many items may each card have on loan?": ["twenty items"],
    "How many days does an interlibrary request take to arrive, and what does it cost?": [
        "two dollars",
        "ten to fourteen days",
    ],
}
METRICS = ["P_3", "success_3", "recip_rank", "ndcg_cut_3"]


def one_document_prompt(query: str, documents: list[str]) -> list[BaseMessage]:
    """The generator's input for one document: the document as source [1], then the question."""
    sources = "\n".join(f"[{i}] {' '.join(d.split())}" for i, d in enumerate(documents, 1))
    return [
        SystemMessage(f"Answer from this source only.\n\nSources:\n{sources}"),
        HumanMessage(query),
    ]


def turns(reverse: bool) -> list[RagTurn]:
    """One turn per question: BM25's top three paragraphs (reversed: worst first), gold attached."""
    retriever = CorpusRetriever(k=3)
    built = []
    for question, gold in QA_SET.items():
        documents = retriever.invoke(question)
        if reverse:
            documents = documents[::-1]
        contexts = [Context(text=d.page_content, id=d.id, rank=i) for i, d in enumerate(documents)]
        built.append(RagTurn(query=question, contexts=contexts, answer="", expected=gold))
    return built


def main() -> None:
    """Score the QA set's retrieval with eRAG, in BM25's order and reversed, and compare."""
    reader = OfflineStandInChatModel(styles=("exact",))  # offline stand-in: quotes exactly
    generator = LangChainGenerator(reader, prompt=one_document_prompt)
    erag = ERAG(generator, metric="contains", retrieval_metrics=METRICS)

    means: dict[str, dict[str, float]] = {}
    for order in ("bm25", "reversed"):
        print(f"\nretrieval order: {order}")
        results = groundwire.evaluate_many(turns(reverse=order == "reversed"), [erag])
        totals = dict.fromkeys(METRICS, 0.0)
        for question, scores in zip(QA_SET, results, strict=True):
            score = scores["erag"]
            details: dict[str, Any] = score.details
            metrics = details["metrics"]
            for name in METRICS:
                totals[name] += metrics[name]
            print(f"  labels {details['labels']}  rr={metrics['recip_rank']:.2f}  {question}")
        means[order] = {name: total / len(QA_SET) for name, total in totals.items()}

    print("\nmean over the QA set:")
    print(f"  {'metric':12} {'bm25':>6} {'reversed':>9}")
    for name in METRICS:
        print(f"  {name:12} {means['bm25'][name]:6.3f} {means['reversed'][name]:9.3f}")


if __name__ == "__main__":
    main()
