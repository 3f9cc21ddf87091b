"""`ReplyingChatModel`: what the demo's two LangChain chat models share.

Each model only says how it replies (`_reply`: the text, the model that answered, its own
response metadata and the token usage); LangChain's `_generate` is written here once, so both
models report their reply, model name and token usage to LangChain (and so onto the LLM span)
the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

__all__ = ["Reply", "ReplyingChatModel"]


@dataclass(frozen=True, slots=True)
class Reply:
    """One reply of a demo chat model."""

    text: str
    model: str
    """The model that answered (`model_name` in the response metadata and the LLM output)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """More response metadata (e.g. the finish reason, the stand-in's quoting style)."""
    tokens: tuple[int, int, int] | None = None
    """(input, output, total) tokens, when known."""


class ReplyingChatModel(BaseChatModel):
    """A LangChain chat model whose subclasses only write `_reply`."""

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None) -> Reply:
        """The reply to `messages`."""
        raise NotImplementedError

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        """The reply as LangChain's chat result, with its model name and token usage."""
        reply = self._reply(messages, stop)
        usage = None
        if reply.tokens is not None:
            sent, received, total = reply.tokens
            usage = {"input_tokens": sent, "output_tokens": received, "total_tokens": total}
        message = AIMessage(
            content=reply.text,
            response_metadata={"model_name": reply.model, **reply.metadata},
            usage_metadata=usage,
        )
        return ChatResult(
            generations=[ChatGeneration(message=message)],
            llm_output={"model_name": reply.model},
        )
