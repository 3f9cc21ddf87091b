"""OpenTelemetry instrumentation of LlamaIndex for groundwire RAG evaluation.

Usage::

    from groundwire_llamaindex import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument()  # global tracer provider
    LlamaIndexInstrumentor().instrument(tracer_provider=provider, hide_document_text=True)

or, with no code change, `opentelemetry-instrument python app.py` (entry point
`groundwire_llamaindex` in the `opentelemetry_instrumentor` group).

Every query becomes a tree of spans with OpenInference and GenAI-convention attributes: the
query engine and synthesizer (CHAIN), retriever (RETRIEVER, `retrieval {index id}`), node
postprocessors (RERANKER), LLM (`chat {model}`) and embedding (`embeddings {model}`) calls.
Privacy switches (arguments, or the `GROUNDWIRE_HIDE_INPUTS`, `GROUNDWIRE_HIDE_OUTPUTS`,
`GROUNDWIRE_HIDE_DOCUMENT_TEXT` and `GROUNDWIRE_MAX_VALUE_LENGTH` variables) keep text off the
spans; groundwire's online evaluation still sees the full values in memory. See
docs/llamaindex.md.
"""

from groundwire_llamaindex._instrumentor import LlamaIndexInstrumentor
from groundwire_llamaindex.version import __version__

__all__ = ["LlamaIndexInstrumentor", "__version__"]
