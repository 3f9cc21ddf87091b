"""`OpenAIGenerator`: any OpenAI-compatible chat-completions server as an eRAG generator.

`openai` is imported when the first client is built, not when groundwire is imported. Unless
a client is given, one `AsyncOpenAI` client is built per event loop (an async HTTP client cannot
cross loops), from `base_url` / `api_key` or the `OPENAI_*` environment variables.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from groundwire.evaluators.erag._generators import (
    DEFAULT_PROMPT,
    BatchedGenerator,
    Generation,
    PromptSpec,
)

__all__ = ["OpenAIGenerator"]


class OpenAIGenerator(BatchedGenerator):
    """One `chat.completions.create` call per document, `max_concurrency` calls at a time.

    The prompt becomes one user message (a `prompt` callable may return the message list
    itself). `temperature` defaults to 0 for repeatable labels; `request_options` adds any other
    request field (e.g. `max_tokens`, `seed`).
    """

    def __init__(
        self,
        model: str,
        *,
        client: Any | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float | None = 60.0,
        max_retries: int = 2,
        prompt: PromptSpec = DEFAULT_PROMPT,
        max_concurrency: int = 8,
        temperature: float | None = 0.0,
        request_options: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty model name, got {model!r}")
        if client is not None and (base_url is not None or api_key is not None):
            raise ValueError("give either client or base_url/api_key, not both")
        super().__init__(prompt=prompt, max_concurrency=max_concurrency)
        self.model = model
        self.temperature = temperature
        self.request_options = dict(request_options or {})
        self._client = client
        self._client_options: dict[str, Any] = {
            "base_url": base_url,
            "api_key": api_key,
            "timeout": timeout_s,
            "max_retries": max_retries,
        }
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._clients = weakref.WeakKeyDictionary()
        self._clients_lock = threading.Lock()

    def _client_for_loop(self) -> Any:
        """The given client, or the one built for the running event loop."""
        if self._client is not None:
            return self._client
        loop = asyncio.get_running_loop()
        with self._clients_lock:
            client = self._clients.get(loop)
            if client is None:
                import openai  # lazy: openai costs ~0.8 s to import

                client = self._clients[loop] = openai.AsyncOpenAI(**self._client_options)
            return client

    async def aclose(self) -> None:
        """Close the client built for the running loop (a client given by the caller stays open)."""
        loop = asyncio.get_running_loop()
        with self._clients_lock:
            client = self._clients.pop(loop, None)
        if client is not None:
            await client.close()

    def _messages(self, model_input: Any) -> list[Any]:
        """The chat messages for a prompt: a str becomes one user message."""
        if isinstance(model_input, str):
            return [{"role": "user", "content": model_input}]
        if isinstance(model_input, list):
            return model_input
        raise TypeError(
            f"the prompt gave a {type(model_input).__name__}; expected a str or a message list"
        )

    async def _acall(self, model_input: Any) -> Generation:
        """One chat-completions request."""
        request: dict[str, Any] = {"model": self.model, "messages": self._messages(model_input)}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        request.update(self.request_options)
        response = await self._client_for_loop().chat.completions.create(**request)
        if not response.choices:
            raise ValueError(f"model {self.model!r} returned no choices")
        text = response.choices[0].message.content or ""
        usage = response.usage
        if usage is None:
            return Generation(text)
        return Generation(text, int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
