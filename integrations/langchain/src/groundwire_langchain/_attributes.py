"""Small attribute builders for LLM runs: request model and provider, response model, tokens.

Each builder yields `(key, value)` pairs and reads one part of LangChain's run data, so the
handler can run each on its own and an odd field loses only its own attributes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.outputs import ChatGeneration, Generation, LLMResult

from groundwire import semconv
from groundwire.capture import Attribute

__all__ = ["llm_output_value", "model_name", "request_attributes", "response_attributes"]

_MODEL_KEYS = ("model", "model_name", "model_id", "deployment_name")
"""Invocation-parameter keys that name the model, in the order LangChain integrations use them."""


def model_name(metadata: Mapping[str, Any] | None, invocation_params: Any) -> str | None:
    """The requested model: LangChain's `ls_model_name`, else the invocation parameters'."""
    name = (metadata or {}).get("ls_model_name")
    if isinstance(name, str) and name:
        return name
    if isinstance(invocation_params, Mapping):
        for key in _MODEL_KEYS:
            value = invocation_params.get(key)
            if isinstance(value, str) and value:
                return value
    return None


def request_attributes(
    operation: str, model: str | None, metadata: Mapping[str, Any] | None
) -> Iterator[Attribute]:
    """What an LLM span knows when it starts: kind, operation, model and provider."""
    yield semconv.OPENINFERENCE_SPAN_KIND, semconv.SPAN_KIND_LLM
    yield semconv.GEN_AI_OPERATION_NAME, operation
    if model:
        yield semconv.LLM_MODEL_NAME, model
        yield semconv.GEN_AI_REQUEST_MODEL, model
    provider = (metadata or {}).get("ls_provider")
    if isinstance(provider, str) and provider:
        yield semconv.LLM_PROVIDER, provider
        yield semconv.GEN_AI_PROVIDER_NAME, provider


def response_attributes(response: LLMResult) -> Iterator[Attribute]:
    """Response model and token counts, in OpenInference and GenAI names."""
    generations = response.generations[0] if response.generations else []
    llm_output = response.llm_output if isinstance(response.llm_output, Mapping) else {}
    response_model: Any = None
    usage: tuple[Any, Any, Any] | None = None
    for generation in generations:
        message = getattr(generation, "message", None)
        metadata = getattr(message, "response_metadata", None) or {}
        response_model = response_model or metadata.get("model_name") or metadata.get("model")
        usage_metadata = getattr(message, "usage_metadata", None)
        if usage is None and usage_metadata:
            usage = (
                usage_metadata.get("input_tokens"),
                usage_metadata.get("output_tokens"),
                usage_metadata.get("total_tokens"),
            )
    response_model = response_model or llm_output.get("model_name") or llm_output.get("model")
    if isinstance(response_model, str) and response_model:
        yield semconv.GEN_AI_RESPONSE_MODEL, response_model
    if usage is None:
        token_usage = llm_output.get("token_usage") or llm_output.get("usage")
        if isinstance(token_usage, Mapping):
            usage = (
                token_usage.get("prompt_tokens", token_usage.get("input_tokens")),
                token_usage.get("completion_tokens", token_usage.get("output_tokens")),
                token_usage.get("total_tokens"),
            )
    if usage is not None:
        yield from _token_attributes(*usage)


def _token_attributes(prompt: Any, completion: Any, total: Any) -> Iterator[Attribute]:
    if _is_count(prompt):
        yield semconv.LLM_TOKEN_COUNT_PROMPT, prompt
        yield semconv.GEN_AI_USAGE_INPUT_TOKENS, prompt
    if _is_count(completion):
        yield semconv.LLM_TOKEN_COUNT_COMPLETION, completion
        yield semconv.GEN_AI_USAGE_OUTPUT_TOKENS, completion
    if not _is_count(total) and _is_count(prompt) and _is_count(completion):
        total = prompt + completion
    if _is_count(total):
        yield semconv.LLM_TOKEN_COUNT_TOTAL, total


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def llm_output_value(response: LLMResult) -> Any:
    """What the model answered: one generation's text (its message when it calls tools)."""
    generations: list[Generation] = list(response.generations[0]) if response.generations else []
    values = [_generation_value(generation) for generation in generations]
    if len(values) == 1:
        return values[0]
    return values


def _generation_value(generation: Generation) -> Any:
    if isinstance(generation, ChatGeneration) and getattr(generation.message, "tool_calls", None):
        return generation.message
    return generation.text
