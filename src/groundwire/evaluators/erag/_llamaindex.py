"""`LlamaIndexGenerator`: a LlamaIndex LLM as an eRAG generator.

LlamaIndex is imported by the caller, never by this module: the LLM is used through its
`acomplete` (a prompt string) or `achat` (a list of chat messages from a `prompt` callable).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from groundwire.evaluators.erag._generators import (
    DEFAULT_PROMPT,
    BatchedGenerator,
    Generation,
    PromptSpec,
)

__all__ = ["LlamaIndexGenerator"]


def _usage(raw: Any) -> tuple[int, int]:
    """Prompt and completion tokens from an OpenAI-style raw response (0, 0 when absent)."""
    usage = raw.get("usage") if isinstance(raw, Mapping) else getattr(raw, "usage", None)
    if usage is None:
        return 0, 0
    if isinstance(usage, Mapping):
        return int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(
        getattr(usage, "completion_tokens", 0) or 0
    )


class LlamaIndexGenerator(BatchedGenerator):
    """Calls `llm.acomplete(prompt)` (or `llm.achat(messages)`) once per document.

    A `prompt` callable may return a list of LlamaIndex `ChatMessage`s to use the chat API.
    Token counts are read from the provider's raw response when it carries OpenAI-style usage.
    """

    def __init__(
        self, llm: Any, *, prompt: PromptSpec = DEFAULT_PROMPT, max_concurrency: int = 8
    ) -> None:
        if not callable(getattr(llm, "acomplete", None)):
            raise TypeError(
                f"llm must be a LlamaIndex LLM (with acomplete), got {type(llm).__name__}"
            )
        super().__init__(prompt=prompt, max_concurrency=max_concurrency)
        self.llm = llm

    async def _acall(self, model_input: Any) -> Generation:
        """One `acomplete` (str input) or `achat` (message list) call."""
        if isinstance(model_input, str):
            response = await self.llm.acomplete(model_input)
            text = response.text
        elif isinstance(model_input, list):
            response = await self.llm.achat(model_input)
            text = response.message.content
        else:
            raise TypeError(
                f"the prompt gave a {type(model_input).__name__}; a LlamaIndex LLM takes a str "
                "or a list of ChatMessage"
            )
        input_tokens, output_tokens = _usage(getattr(response, "raw", None))
        return Generation(text or "", input_tokens, output_tokens)
