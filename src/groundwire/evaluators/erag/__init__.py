"""eRAG (Salemi and Zamani, SIGIR 2024): retrieval quality scored by what each document does for
the answer.

`erag_score` keeps the contract of the reference `erag.eval`; `ERAG` is the per-turn evaluator
(registry name `erag`); the downstream metrics and generator adapters are the pieces around them.
LangChain, LlamaIndex, openai and pytrec_eval are imported only when used.
"""

from __future__ import annotations

from groundwire.evaluators.erag._adapt import as_text_generator
from groundwire.evaluators.erag._downstream import (
    DOWNSTREAM_METRICS,
    BatchDownstreamMetric,
    DownstreamMetric,
    batchify_downstream_metric,
    contains,
    exact_match,
    normalize_answer,
    rouge_l,
    token_f1,
)
from groundwire.evaluators.erag._erag import ERAG
from groundwire.evaluators.erag._expected import attach_expected, load_expected
from groundwire.evaluators.erag._generators import (
    DEFAULT_PROMPT,
    AsyncTextGenerator,
    BatchedGenerator,
    FunctionGenerator,
    Generation,
    PromptSpec,
    TextGenerator,
    batchify_text_generator,
)
from groundwire.evaluators.erag._langchain import LangChainGenerator
from groundwire.evaluators.erag._llamaindex import LlamaIndexGenerator
from groundwire.evaluators.erag._openai import OpenAIGenerator
from groundwire.evaluators.erag._score import aerag_score, erag_score, score_relevance_labels

__all__ = [
    "DEFAULT_PROMPT",
    "DOWNSTREAM_METRICS",
    "ERAG",
    "AsyncTextGenerator",
    "BatchDownstreamMetric",
    "BatchedGenerator",
    "DownstreamMetric",
    "FunctionGenerator",
    "Generation",
    "LangChainGenerator",
    "LlamaIndexGenerator",
    "OpenAIGenerator",
    "PromptSpec",
    "TextGenerator",
    "aerag_score",
    "as_text_generator",
    "attach_expected",
    "batchify_downstream_metric",
    "batchify_text_generator",
    "contains",
    "erag_score",
    "exact_match",
    "load_expected",
    "normalize_answer",
    "rouge_l",
    "score_relevance_labels",
    "token_f1",
]
