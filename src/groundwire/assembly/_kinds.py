"""The roles a span can play in a RAG pipeline, as every dialect reports them."""

from __future__ import annotations

from typing import Final

__all__ = [
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
