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
from contextlib import contextmanager
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


class _Step:
    """One step of a wrapped stream: LlamaIndex's active span set to the synthesizer call
    around it, and the outcome finished when the step ends the stream (exhausted, or raised)."""

    __slots__ = ("_outcome", "_span_id", "_token")

    def __init__(self, span_id: str | None, outcome: StreamOutcome) -> None:
        self._span_id = span_id
        self._outcome = outcome
        self._token: Any = None

    def __enter__(self) -> None:
        if self._span_id is not None:
            self._token = active_span_id.set(self._span_id)

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, _traceback: Any
    ) -> None:
        try:
            if kind is not None and issubclass(kind, StopIteration | StopAsyncIteration):
                self._outcome.finish(None, True)
            elif error is not None:
                self._outcome.finish(error, False)
        finally:
            if self._token is not None:
                active_span_id.reset(self._token)


@contextmanager
def _closing(outcome: StreamOutcome) -> Iterator[None]:
    """Close a wrapped stream: its outcome is finished (not exhausted) whatever the close does."""
    try:
        yield
    finally:
        outcome.finish(None, False)


class _Wrapper:
    """What both stream wrappers share: the synthesizer call's span id and the outcome, which
    is finished (not exhausted) if the wrapper is collected before the stream ended."""

    def __init__(self, span_id: str | None, outcome: StreamOutcome) -> None:
        self._span_id = span_id
        self.outcome = outcome
        weakref.finalize(self, outcome.finish, None, False)

    def _step(self) -> _Step:
        """One step of the stream, run as part of the synthesizer call."""
        return _Step(self._span_id, self.outcome)

    def _took(self, item: Any) -> str:
        """Keep the text of the token a step produced, and return it."""
        self.outcome.add(item)
        return item  # type: ignore[no-any-return]


class TokenStream(_Wrapper, Iterator[str]):
    """Stands in for a sync token generator; see the module docstring."""

    def __init__(self, inner: Iterator[Any], span_id: str | None, outcome: StreamOutcome) -> None:
        super().__init__(span_id, outcome)
        self._inner = inner

    def __iter__(self) -> TokenStream:
        return self

    def __next__(self) -> str:
        """The next token, run as part of the synthesizer call; ends the spans at the end."""
        with self._step():
            item = next(self._inner)
        return self._took(item)

    def close(self) -> None:
        """Close the underlying generator and end the waiting spans."""
        with _closing(self.outcome):
            close = getattr(self._inner, "close", None)
            if close is not None:
                close()


class AsyncTokenStream(_Wrapper, AsyncIterator[str]):
    """Stands in for an async token generator; see the module docstring."""

    def __init__(
        self, inner: AsyncIterator[Any], span_id: str | None, outcome: StreamOutcome
    ) -> None:
        super().__init__(span_id, outcome)
        self._inner = inner

    def __aiter__(self) -> AsyncTokenStream:
        return self

    async def __anext__(self) -> str:
        """The next token, run as part of the synthesizer call; ends the spans at the end."""
        with self._step():
            item = await self._inner.__anext__()
        return self._took(item)

    async def aclose(self) -> None:
        """Close the underlying generator and end the waiting spans."""
        with _closing(self.outcome):
            aclose = getattr(self._inner, "aclose", None)
            if aclose is not None:
                await aclose()
