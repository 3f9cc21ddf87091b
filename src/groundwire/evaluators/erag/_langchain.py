"""`LangChainGenerator`: a LangChain runnable (chat model, LLM or chain) as an eRAG generator.

LangChain is imported by the caller, never by this module: the runnable is used through its
`ainvoke`, so importing groundwire stays free of LangChain.
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

__all__ = ["LangChainGenerator", "message_text"]


def message_text(result: Any) -> str:
    """The text of what a runnable returned: a message's content, or a string as is."""
    if isinstance(result, str):
        return result
    content = getattr(result, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    raise TypeError(
        f"the runnable returned {type(result).__name__}; expected a message or a str "
        "(end a chain with StrOutputParser() or a chat model)"
    )


def _usage(result: Any) -> tuple[int, int]:
    """Input and output tokens from a message's `usage_metadata` (0, 0 when absent)."""
    usage = getattr(result, "usage_metadata", None)
    if not isinstance(usage, Mapping):
        return 0, 0
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)


class LangChainGenerator(BatchedGenerator):
    """Calls `runnable.ainvoke(prompt)` once per document, `max_concurrency` calls at a time.

    `runnable` is a chat model, LLM or chain; it receives the formatted prompt string, or
    whatever a `prompt` callable returns (e.g. a dict for a chain that starts with a prompt
    template). `config` is passed to every call (tags, callbacks, run name).
    """

    def __init__(
        self,
        runnable: Any,
        *,
        prompt: PromptSpec = DEFAULT_PROMPT,
        max_concurrency: int = 8,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if not callable(getattr(runnable, "ainvoke", None)):
            raise TypeError(
                "runnable must be a LangChain Runnable (with ainvoke), "
                f"got {type(runnable).__name__}"
            )
        super().__init__(prompt=prompt, max_concurrency=max_concurrency)
        self.runnable = runnable
        self.config = dict(config) if config is not None else None

    async def _acall(self, model_input: Any) -> Generation:
        """One `ainvoke` of the runnable."""
        result = await self.runnable.ainvoke(model_input, self.config)
        input_tokens, output_tokens = _usage(result)
        return Generation(message_text(result), input_tokens, output_tokens)
