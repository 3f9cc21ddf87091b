"""Streaming answers: keep the query's spans open until the token stream is consumed.

A streaming query engine returns before any token exists; the LLM runs while the caller
iterates. The wrappers here stand in for `StreamingResponse.response_gen`: they collect the
text, end the waiting spans with it when the stream ends (or fails, or is dropped), and run
each step with LlamaIndex's active span set to the synthesizer call that made the stream, so
the LLM's span gets its parent from LlamaIndex's own parent id.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from llama_index.core.instrumentation.span import active_span_id

from groundwire_llamaindex._record import Record

__all__ = ["AsyncTokenStream", "StreamOutcome", "TokenStream"]


class StreamOutcome:
    """The text a stream produced and the records waiting for it; finishes them exactly once."""

    __slots__ = ("_done", "_finish", "parts", "waiting")

    def __init__(self, finish: Callable[[Record, str | None, BaseException | None], None]) -> None:
        self._finish = finish
        self._done = False
        self.parts: list[str] = []
        self.waiting: list[Record] = []

    def add(self, item: object) -> None:
        """Keep the text of one streamed token."""
        if isinstance(item, str):
            self.parts.append(item)

    def finish(self, error: BaseException | None, exhausted: bool) -> None:
        """End every waiting record with the streamed text (when there is any) and `error`."""
        if self._done:
            return
        self._done = True
        text = "".join(self.parts) if exhausted or self.parts else None
        for record in self.waiting:
            self._finish(record, text, error)


class TokenStream(Iterator[str]):
    """Stands in for a sync token generator; see the module docstring."""

    def __init__(self, inner: Iterator[Any], span_id: str | None, outcome: StreamOutcome) -> None:
        self._inner = inner
        self._span_id = span_id
        self.outcome = outcome
        weakref.finalize(self, outcome.finish, None, False)

    def __iter__(self) -> TokenStream:
        return self

    def __next__(self) -> str:
        """The next token, run as part of the synthesizer call; ends the spans at the end."""
        token = active_span_id.set(self._span_id) if self._span_id is not None else None
        try:
            item = next(self._inner)
        except StopIteration:
            self.outcome.finish(None, True)
            raise
        except BaseException as error:
            self.outcome.finish(error, False)
            raise
        finally:
            if token is not None:
                active_span_id.reset(token)
        self.outcome.add(item)
        return item  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the underlying generator and end the waiting spans."""
        close = getattr(self._inner, "close", None)
        try:
            if close is not None:
                close()
        finally:
            self.outcome.finish(None, False)


class AsyncTokenStream(AsyncIterator[str]):
    """Stands in for an async token generator; see the module docstring."""

    def __init__(
        self, inner: AsyncIterator[Any], span_id: str | None, outcome: StreamOutcome
    ) -> None:
        self._inner = inner
        self._span_id = span_id
        self.outcome = outcome
        weakref.finalize(self, outcome.finish, None, False)

    def __aiter__(self) -> AsyncTokenStream:
        return self

    async def __anext__(self) -> str:
        """The next token, run as part of the synthesizer call; ends the spans at the end."""
        token = active_span_id.set(self._span_id) if self._span_id is not None else None
        try:
            item = await self._inner.__anext__()
        except StopAsyncIteration:
            self.outcome.finish(None, True)
            raise
        except BaseException as error:
            self.outcome.finish(error, False)
            raise
        finally:
            if token is not None:
                active_span_id.reset(token)
        self.outcome.add(item)
        return item  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """Close the underlying generator and end the waiting spans."""
        aclose = getattr(self._inner, "aclose", None)
        try:
            if aclose is not None:
                await aclose()
        finally:
            self.outcome.finish(None, False)
