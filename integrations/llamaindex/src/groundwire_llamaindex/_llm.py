"""What an LLM call's span is called and says about the model: operation, model, provider."""

from __future__ import annotations

import logging
from typing import Any, Final

from opentelemetry.util.types import AttributeValue

from groundwire import semconv

__all__ = ["describe_llm"]

logger = logging.getLogger("groundwire_llamaindex")

_PROVIDERS: Final = {
    "azure_openai": "azure.ai.openai",
    "bedrock": "aws.bedrock",
    "bedrock_converse": "aws.bedrock",
    "gemini": "gcp.gemini",
    "google_genai": "gcp.gen_ai",
    "vertex": "gcp.vertex_ai",
    "mistralai": "mistral_ai",
}
"""LlamaIndex integration package -> GenAI `gen_ai.provider.name`, where the two differ."""

_provider_cache: dict[type[Any], str | None] = {}


def _provider(instance: object) -> str | None:
    """The provider of an LLM from a `llama_index.llms.<provider>` package, by its class."""
    cls = type(instance)
    if cls not in _provider_cache:
        parts = cls.__module__.split(".")
        package = parts[2] if len(parts) > 2 and parts[:2] == ["llama_index", "llms"] else None
        _provider_cache[cls] = _PROVIDERS.get(package, package) if package else None
    return _provider_cache[cls]


def _operation(method: str, metadata: Any) -> str:
    """`chat` for chat calls and chat models, `text_completion` for completion calls."""
    if "chat" in method:
        return semconv.GEN_AI_OPERATION_CHAT
    if "complete" in method:
        return semconv.GEN_AI_OPERATION_TEXT_COMPLETION
    is_chat = getattr(metadata, "is_chat_model", False)
    return semconv.GEN_AI_OPERATION_CHAT if is_chat else semconv.GEN_AI_OPERATION_TEXT_COMPLETION


def describe_llm(instance: Any, method: str, attributes: dict[str, AttributeValue]) -> str:
    """Add the operation, model and provider of an LLM call to `attributes`; return its span name.

    The span is named `{operation} {model}` (GenAI conventions), or just the operation when the
    LLM names no model. The model is the LLM's `model` field, else its metadata's `model_name`.
    """
    try:
        metadata = instance.metadata
    except Exception:
        logger.debug("LLM metadata unavailable", exc_info=True)
        metadata = None
    operation = _operation(method, metadata)
    attributes[semconv.GEN_AI_OPERATION_NAME] = operation
    model = getattr(instance, "model", None)
    if not isinstance(model, str) or not model:
        model = getattr(metadata, "model_name", None)
    provider = _provider(instance)
    if provider is not None:
        attributes[semconv.LLM_PROVIDER] = provider
        attributes[semconv.GEN_AI_PROVIDER_NAME] = provider
    if not isinstance(model, str) or not model:
        return operation
    attributes[semconv.LLM_MODEL_NAME] = model
    attributes[semconv.GEN_AI_REQUEST_MODEL] = model
    return f"{operation} {model}"
