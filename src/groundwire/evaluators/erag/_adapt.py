"""Which generator serves what the user passed: ours as they are, framework objects in adapters.

Apart from `_generators` so the adapters (which subclass `BatchedGenerator`) are imported here at
the top and `_generators` needs no import of them: no import circle, not even inside a function.
"""

from __future__ import annotations

from typing import Any

from groundwire.evaluators.erag._generators import (
    AsyncTextGenerator,
    BatchedGenerator,
    TextGenerator,
)
from groundwire.evaluators.erag._langchain import LangChainGenerator
from groundwire.evaluators.erag._llamaindex import LlamaIndexGenerator

__all__ = ["as_text_generator"]


def as_text_generator(generator: Any) -> BatchedGenerator | AsyncTextGenerator | TextGenerator:
    """Our generators as they are; a LangChain runnable or LlamaIndex LLM in its adapter; any
    other callable as a reference-style `text_generator`."""
    if isinstance(generator, BatchedGenerator):
        return generator
    # LangChain models also have an `agenerate` (unrelated): test for `ainvoke` first
    if callable(getattr(generator, "ainvoke", None)):
        return LangChainGenerator(generator)
    if callable(getattr(generator, "acomplete", None)):
        return LlamaIndexGenerator(generator)
    if isinstance(generator, AsyncTextGenerator) or callable(generator):
        return generator  # type: ignore[no-any-return]
    raise TypeError(
        f"generator must be a groundwire generator, a LangChain runnable, a LlamaIndex LLM or a "
        f"text_generator callable, got {type(generator).__name__}"
    )
