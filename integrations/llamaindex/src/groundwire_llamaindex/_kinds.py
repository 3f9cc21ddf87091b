"""Which LlamaIndex components become spans, and of which OpenInference kind.

Only the components a RAG turn is made of get a span: query and chat engines, synthesizers,
retrievers, node postprocessors (rerankers), LLMs, embeddings and tools. Everything else
LlamaIndex traces (text splitters, prompt programs, index builders) is transparent: its
children hang under the nearest traced ancestor, which keeps the trace readable and cheap.
"""

from __future__ import annotations

from typing import Any, Final

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.base import BaseLLM
from llama_index.core.chat_engine.types import BaseChatEngine
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.response_synthesizers.base import BaseSynthesizer
from llama_index.core.tools.types import BaseTool
from llama_index.core.workflow import Workflow

from groundwire import semconv

__all__ = ["kind_of"]

_KINDS: Final[tuple[tuple[type[Any], str], ...]] = (
    (BaseQueryEngine, semconv.SPAN_KIND_CHAIN),
    (BaseChatEngine, semconv.SPAN_KIND_CHAIN),
    (BaseSynthesizer, semconv.SPAN_KIND_CHAIN),
    (BaseRetriever, semconv.SPAN_KIND_RETRIEVER),
    (BaseNodePostprocessor, semconv.SPAN_KIND_RERANKER),
    (BaseLLM, semconv.SPAN_KIND_LLM),
    (BaseEmbedding, semconv.SPAN_KIND_EMBEDDING),
    (BaseTool, semconv.SPAN_KIND_TOOL),
    (Workflow, semconv.SPAN_KIND_CHAIN),
)

_cache: dict[type[Any], str | None] = {}


def kind_of(instance: object) -> str | None:
    """The OpenInference span kind of `instance`'s class, or None when it gets no span."""
    cls = type(instance)
    try:
        return _cache[cls]
    except KeyError:
        pass
    kind = next((kind for base, kind in _KINDS if issubclass(cls, base)), None)
    _cache[cls] = kind
    return kind
