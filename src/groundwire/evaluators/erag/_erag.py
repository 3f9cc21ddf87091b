"""`ERAG`: the per-turn eRAG evaluator (registry name `erag`) for turns that carry `expected`.

Each of the turn's documents alone is given to the generator with the turn's query; the output is
scored against `turn.expected` by the downstream metric; those labels feed the retrieval metrics.
The score's value is the primary metric (the first of `retrieval_metrics` unless `primary` is
given; by default `P`: the share of retrieved documents that, alone, let the generator produce an
expected answer); every metric, the labels and the token usage are in `details`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

from groundwire._types import RagTurn, Score
from groundwire.evaluators.erag._adapt import as_text_generator
from groundwire.evaluators.erag._downstream import DownstreamMetric, resolve_downstream_metric
from groundwire.evaluators.erag._generators import (
    AsyncTextGenerator,
    BatchedGenerator,
    Generation,
)
from groundwire.evaluators.erag._retrieval import (
    aggregate,
    check_label,
    metric_keys,
    parse_retrieval_metrics,
    score_labels,
)

__all__ = ["ERAG"]

DEFAULT_RETRIEVAL_METRICS = ("P", "success")
"""Defined for binary and continuous labels alike, so any downstream metric works with them."""


class ERAG:
    """eRAG per turn: how many of the retrieved documents alone lead to an expected answer.

    Options: `generator` (see `as_text_generator`), or `model` to build an `OpenAIGenerator` from
    the `OPENAI_*` environment variables; `metric`, a downstream metric name (`contains`,
    `exact_match`, `token_f1`, `rouge_l`) or a callable `(output, gold_answers) -> [0, 1]`;
    `retrieval_metrics` in trec_eval naming; `primary`, the metric used as the score's value.
    """

    def __init__(
        self,
        generator: Any = None,
        *,
        model: str | None = None,
        metric: str | DownstreamMetric = "contains",
        retrieval_metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS,
        primary: str | None = None,
        max_concurrency: int = 8,
        name: str = "erag",
    ) -> None:
        if generator is None and model is None:
            raise ValueError(
                "ERAG needs a generator (a LangChain runnable, LlamaIndex LLM, OpenAIGenerator, "
                "...) or model= (an OpenAI-compatible model read from the OPENAI_* variables)"
            )
        if generator is not None and model is not None:
            raise ValueError("give either generator or model, not both")
        if generator is None:
            from groundwire.evaluators.erag._openai import OpenAIGenerator

            generator = OpenAIGenerator(str(model), max_concurrency=max_concurrency)
        self.generator = as_text_generator(generator)
        self.metric = resolve_downstream_metric(metric)
        self.metric_name = metric if isinstance(metric, str) else getattr(metric, "__name__", "")
        self.retrieval_metrics = parse_retrieval_metrics(retrieval_metrics)
        names = [m.name for m in self.retrieval_metrics]
        self.primary = names[0] if primary is None else primary
        if self.primary not in names:
            raise ValueError(f"primary {self.primary!r} is not one of retrieval_metrics {names}")
        keys = metric_keys(self.retrieval_metrics[names.index(self.primary)])
        if keys != (self.primary,):
            raise ValueError(
                f"primary {self.primary!r} gives several values {list(keys)[:3]}...; "
                "name one of them as primary"
            )
        self._name = name

    @property
    def name(self) -> str:
        """The score's name (`gen_ai.evaluation.name`)."""
        return self._name

    async def _generate(self, query: str, documents: Sequence[str]) -> list[Generation]:
        """One generation per document, concurrently when the generator allows it."""
        generator = self.generator
        if isinstance(generator, BatchedGenerator):
            return list(
                await asyncio.gather(*(generator.agenerate_one(query, [d]) for d in documents))
            )
        if isinstance(generator, AsyncTextGenerator):
            outputs = await asyncio.gather(*(generator.agenerate({query: [d]}) for d in documents))
        else:
            sync_generator: Any = generator
            outputs = [await asyncio.to_thread(sync_generator, {query: [d]}) for d in documents]
        results = []
        for position, output in enumerate(outputs):
            if not isinstance(output, dict) or not isinstance(output.get(query), str):
                raise ValueError(f"the generator gave no text output at rank {position}")
            results.append(Generation(output[query]))
        return results

    async def aevaluate(self, turn: RagTurn) -> Score:
        """Generate from each document alone, label it, and score the ranked list."""
        if not turn.expected:
            return Score.not_applicable(self.name, "no_expected", "the turn has no expected answer")
        documents = turn.context_texts
        if not documents:
            return Score.not_applicable(self.name, "no_contexts", "the turn retrieved nothing")
        generations = await self._generate(turn.query, documents)
        golds = list(turn.expected)
        labels = [
            check_label(self.metric(g.text, golds), turn.query, position, documents[position])
            for position, g in enumerate(generations)
        ]
        metrics = aggregate(score_labels({turn.query: labels}, self.retrieval_metrics))
        value = metrics[self.primary]
        if math.isnan(value) or not 0.0 <= value <= 1.0:
            raise ValueError(f"primary metric {self.primary!r} is {value}, outside [0, 1]")
        input_tokens = sum(g.input_tokens for g in generations)
        output_tokens = sum(g.output_tokens for g in generations)
        return Score(
            name=self.name,
            value=float(value),
            explanation=self._explain(labels, value),
            details={
                "primary": self.primary,
                "downstream_metric": self.metric_name,
                "metrics": {key: float(number) for key, number in metrics.items()},
                "labels": [float(label) for label in labels],
            },
            usage={"input": input_tokens, "output": output_tokens}
            if input_tokens or output_tokens
            else {},
        )

    def _explain(self, labels: Sequence[float], value: float) -> str:
        """The score's one-sentence explanation."""
        if all(label in (0, 1) for label in labels):
            useful = sum(1 for label in labels if label == 1)
            lead = f"{useful} of {len(labels)} documents alone led to an expected answer"
        else:
            lead = f"documents alone scored {sum(labels) / len(labels):.3f} on average"
        return f"{lead} ({self.metric_name}); {self.primary} = {value:.3f}"
