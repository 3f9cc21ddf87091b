"""Documents a tool or a graph node returned, so a turn gets contexts without a retriever run.

A `@tool(response_format="content_and_artifact")` returns `(text, documents)`: LangChain hands
the callback a `ToolMessage` whose `artifact` holds the documents. A LangGraph node that searched
a vector store itself returns them in its state update (`{"context": [Document, ...]}`, as in
LangGraph's RAG tutorial). Both are recorded like a retriever's documents, on the run's own span.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import ToolMessage

from groundwire import semconv

__all__ = ["returned_documents"]


def returned_documents(kind: str, outputs: Any) -> list[Document] | None:
    """The documents in a tool's artifact or a chain's output (one level deep), else None."""
    if kind == semconv.SPAN_KIND_TOOL:
        artifact = outputs.artifact if isinstance(outputs, ToolMessage) else None
        return _documents(artifact)
    if kind != semconv.SPAN_KIND_CHAIN:
        return None
    found = _documents(outputs)
    if found is None and isinstance(outputs, Mapping):
        lists = [docs for value in outputs.values() if (docs := _documents(value)) is not None]
        found = [document for docs in lists for document in docs] if lists else None
    return found


def _documents(value: Any) -> list[Document] | None:
    """`value` when it is a non-empty list of documents only, else None."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence) or not value:
        return None
    if all(isinstance(item, Document) for item in value):
        return list(value)
    return None
