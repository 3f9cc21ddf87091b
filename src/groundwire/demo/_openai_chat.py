"""`OpenAICompatibleChatModel`: a minimal LangChain chat model over any OpenAI-compatible server.

The demo uses it when a real model is configured (`OPENAI_API_KEY` or
`GROUNDWIRE_JUDGE_BASE_URL`), so it needs no `langchain-openai`. It sends the messages to
`/chat/completions` with the `openai` client (imported on first call) and reports token usage.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import PrivateAttr, SecretStr

from groundwire.demo._chat import Reply, ReplyingChatModel

__all__ = ["OpenAICompatibleChatModel"]


def _role(message: BaseMessage) -> str:
    """The chat-completions role of a LangChain message; ValueError for other kinds."""
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    raise ValueError(
        f"OpenAICompatibleChatModel: cannot send a {type(message).__name__}; "
        "only system, human and AI messages are supported"
    )


class OpenAICompatibleChatModel(ReplyingChatModel):
    """Chat completions from an OpenAI-compatible server (OpenAI, vLLM, Ollama, LiteLLM, ...)."""

    model_name: str = "gpt-4o-mini"
    base_url: str | None = None
    """None means OpenAI's own API."""
    api_key: SecretStr = SecretStr("unused")
    temperature: float = 0.0
    timeout_s: float = 60.0
    _client: Any = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        """LangChain's type tag for this model."""
        return "openai-compatible"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        """What identifies this model in LangChain's invocation parameters (and on spans)."""
        return {"model_name": self.model_name, "base_url": self.base_url}

    def _get_client(self) -> Any:
        """The `openai.OpenAI` client, built (and `openai` imported) on first use."""
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=self.api_key.get_secret_value(),
                timeout=self.timeout_s,
            )
        return self._client

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None) -> Reply:
        """One chat-completions call; the reply with its token usage."""
        response = self._get_client().chat.completions.create(
            model=self.model_name,
            messages=[{"role": _role(m), "content": m.content} for m in messages],
            temperature=self.temperature,
            **({"stop": stop} if stop else {}),
        )
        choice = response.choices[0]
        usage = response.usage
        return Reply(
            choice.message.content or "",
            response.model,
            {"finish_reason": choice.finish_reason},
            None
            if usage is None
            else (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens),
        )
