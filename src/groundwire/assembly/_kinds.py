"""The roles a span can play in a RAG pipeline, as every dialect reports them."""

from __future__ import annotations

from typing import Final

from groundwire import semconv

__all__ = [
    "KINDS_BY_NAME",
    "KIND_EMBEDDING",
    "KIND_GENERATION",
    "KIND_OTHER",
    "KIND_RERANKER",
    "KIND_RETRIEVER",
    "KIND_TOOL",
]

KIND_RETRIEVER: Final = "retriever"
KIND_RERANKER: Final = "reranker"
KIND_GENERATION: Final = "generation"
KIND_EMBEDDING: Final = "embedding"
KIND_OTHER: Final = "other"
KIND_TOOL: Final = "tool"
"""A tool call: its result is a context of the turn that called it, never the turn itself."""

KINDS_BY_NAME: Final = {
    semconv.SPAN_KIND_RETRIEVER: KIND_RETRIEVER,
    semconv.SPAN_KIND_RERANKER: KIND_RERANKER,
    semconv.SPAN_KIND_LLM: KIND_GENERATION,
    semconv.SPAN_KIND_EMBEDDING: KIND_EMBEDDING,
    semconv.SPAN_KIND_TOOL: KIND_TOOL,
}
"""The span types OpenInference names (`openinference.span.kind`, upper case) as kinds; MLflow's
`mlflow.spanType` uses the same names (and one more). Any other name is a plain step."""
