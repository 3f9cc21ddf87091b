"""eRAG throughput: documents scored per second through our generator adapter vs the reference loop.

Both sides score the same ranked lists against the same local OpenAI-compatible server
(`groundwire.testing.OpenAIServer`) that answers every chat completion after a fixed latency.
The reference `erag.eval` is driven as its own `batchify_text_generator` helper drives a model:
one synchronous request per document, one rank position after another. Ours is `erag_score`
with an `OpenAIGenerator` (the async openai client), whose calls overlap up to `max_concurrency`.
Both must return the same numbers; the ratio of documents per second is the result.

Fairness: each side gets a fresh server, one untimed warm-up run (imports, client and connection
set-up) and the same number of timed runs; the figure is the median, with min and max shown.

Run: `python -m tests.benchmarks erag`. Writes results/erag.{md,json}.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any

import openai
from erag.utils import batchify_downstream_metric as reference_batchify_metric
from erag.utils import batchify_text_generator as reference_batchify_generator

from erag import eval as reference_eval
from groundwire.evaluators.erag import (
    DEFAULT_PROMPT,
    OpenAIGenerator,
    batchify_downstream_metric,
    contains,
    erag_score,
)
from groundwire.testing import OpenAIServer, Reply
from tests.benchmarks._timing import Timing, environment, measure, results_dir, scaled

RESULTS = results_dir()
SEED = 20261123
LATENCY_S = 0.050
QUERIES = scaled(20, 2)
DEPTH = scaled(10, 3)
RUNS = scaled(3, 1)
CONCURRENCY = (1, 8, 16, 32)
METRICS = {"P_1", "P_5", "success_3", "map", "ndcg_cut_10", "recip_rank"}
WORDS = ["paris", "london", "rome", "berlin", "madrid", "lisbon", "vienna", "prague", "oslo"]


def _workload() -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """QUERIES ranked lists of DEPTH documents; each document opens with a candidate answer."""
    rng = random.Random(SEED)
    retrieval = {
        f"question {i}": [f"{rng.choice(WORDS)} is mentioned in document {j}" for j in range(DEPTH)]
        for i in range(QUERIES)
    }
    expected = {query: [rng.choice(WORDS)] for query in retrieval}
    return retrieval, expected


def _model(request: Any) -> Reply:
    """The served model: answers with the document's first word, after LATENCY_S."""
    prompt = request["messages"][0]["content"]
    answer = prompt.split("Document:\n", 1)[1].split()[0]
    return Reply.chat(answer, usage=(40, 1), delay_s=LATENCY_S)


def _reference_generator(base_url: str) -> Callable[[dict[str, list[str]]], dict[str, str]]:
    """What a reference user writes: a per-document sync call, batchified by erag.utils."""
    client = openai.OpenAI(base_url=base_url, api_key="bench")

    def generate(query: str, documents: Sequence[str]) -> str:
        prompt = DEFAULT_PROMPT.format(query=query, context="\n\n".join(documents))
        response = client.chat.completions.create(
            model="bench", messages=[{"role": "user", "content": prompt}], temperature=0.0
        )
        return response.choices[0].message.content or ""

    return reference_batchify_generator(generate)  # type: ignore[no-any-return]


def _reference_run(
    retrieval: dict[str, list[str]], expected: dict[str, list[str]]
) -> tuple[Timing, dict[str, Any]]:
    """The reference on a fresh server: one warm-up run, then RUNS timed runs."""
    with OpenAIServer(_model) as server:
        server.record_requests = False
        generator = _reference_generator(server.base_url)
        return measure(
            lambda: reference_eval(
                retrieval, expected, generator, reference_batchify_metric(contains), METRICS
            ),
            runs=RUNS,
        )


def _our_run(
    retrieval: dict[str, list[str]], expected: dict[str, list[str]], concurrency: int
) -> tuple[Timing, dict[str, Any]]:
    """`erag_score` on a fresh server: one warm-up run, then RUNS timed runs."""
    with OpenAIServer(_model) as server:
        server.record_requests = False
        generator = OpenAIGenerator(
            "bench", base_url=server.base_url, api_key="bench", max_concurrency=concurrency
        )
        return measure(
            lambda: erag_score(
                retrieval, expected, generator, batchify_downstream_metric(contains), METRICS
            ),
            runs=RUNS,
        )


def _markdown(results: dict[str, Any]) -> str:
    lines = [
        "# eRAG throughput: generator adapter vs the reference loop",
        "",
        f"{results['documents']} documents ({results['queries']} queries x {results['depth']} "
        f"ranks), one chat completion each, against a local OpenAI-compatible server answering "
        f"after a fixed {results['latency_ms']:.0f} ms. Reference: `erag.eval` with "
        "`erag.utils.batchify_text_generator` over a sync openai client (one request at a time, "
        "rank by rank). Ours: `erag_score` with `OpenAIGenerator` (async client). Same "
        "per-query and aggregated numbers on both sides: "
        f"{'yes' if results['same_numbers'] else 'NO'}.",
        "",
        "| run | max_concurrency | seconds | documents/s | ratio vs reference |",
        "|---|---:|---:|---:|---:|",
        f"| reference `erag.eval` | 1 | {results['reference']['seconds']:.2f} | "
        f"{results['reference']['docs_per_s']:.1f} | 1.0x |",
    ]
    for row in results["ours"]:
        lines.append(
            f"| groundwire `erag_score` | {row['max_concurrency']} | {row['seconds']:.2f} | "
            f"{row['docs_per_s']:.1f} | {row['ratio']:.1f}x |"
        )
    lines += [
        "",
        f"The reference spends {results['reference']['ms_per_doc']:.0f} ms per document: the "
        f"{results['latency_ms']:.0f} ms latency plus the HTTP round trip to the test server. "
        f"Seconds are the median of {results['reference']['timing']['runs']} runs after one "
        "warm-up run, each side on a fresh server (min and max in erag.json). "
        f"Python {results['environment']['python']}, {results['environment']['machine']}, "
        f"load average {results['environment']['load_average_1m']} at the end.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    """Score the workload with the reference and with our adapter; write the results files."""
    retrieval, expected = _workload()
    documents = sum(len(docs) for docs in retrieval.values())
    reference_t, reference = _reference_run(retrieval, expected)
    ours_rows = []
    same = True
    for concurrency in CONCURRENCY:
        timing, ours = _our_run(retrieval, expected, concurrency)
        same = same and ours == reference
        ours_rows.append(
            {
                "max_concurrency": concurrency,
                "seconds": timing.median_s,
                "timing": timing.as_dict(),
                "docs_per_s": documents / timing.median_s,
                "ratio": reference_t.median_s / timing.median_s,
            }
        )
    results: dict[str, Any] = {
        "documents": documents,
        "queries": QUERIES,
        "depth": DEPTH,
        "latency_ms": LATENCY_S * 1000,
        "metrics": sorted(METRICS),
        "same_numbers": same,
        "reference": {
            "seconds": reference_t.median_s,
            "timing": reference_t.as_dict(),
            "docs_per_s": documents / reference_t.median_s,
            "ms_per_doc": reference_t.median_s / documents * 1000,
        },
        "ours": ours_rows,
        "environment": environment(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "erag.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "erag.md").write_text(_markdown(results))
    print(_markdown(results), flush=True)
    if not same:
        raise SystemExit("erag_score and erag.eval disagree on the benchmark workload")


if __name__ == "__main__":
    main()
