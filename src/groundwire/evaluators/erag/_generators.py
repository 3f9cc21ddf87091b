"""Text generators: what eRAG calls once per retrieved document, and the batching around it.

The reference's contract is `text_generator(inputs) -> outputs`, with `inputs` mapping each query
to the list of documents to answer it from (one document per call in eRAG) and `outputs` mapping
each query to the generated text. `BatchedGenerator` implements it on top of one model call per
query, running those calls concurrently under a limit shared by everything that uses the same
generator (one LLM call per document is eRAG's cost, so the calls must overlap). The adapters
(`LangChainGenerator`, `LlamaIndexGenerator`, `OpenAIGenerator`) and `FunctionGenerator` (the
equivalent of the reference's `batchify_text_generator`) are its subclasses; `_adapt` picks the
adapter for a framework object.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import string
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypeVar, runtime_checkable

from groundwire._sync import run_sync

__all__ = [
    "DEFAULT_PROMPT",
    "AsyncTextGenerator",
    "BatchedGenerator",
    "FunctionGenerator",
    "Generation",
    "PromptSpec",
    "TextGenerator",
    "batchify_text_generator",
]

T = TypeVar("T")

TextGenerator: TypeAlias = Callable[[Mapping[str, Sequence[str]]], Mapping[str, str]]
"""The reference's contract: `(query -> documents) -> (query -> generated text)`."""

PromptSpec: TypeAlias = str | Callable[[str, Sequence[str]], Any]
"""A `str.format` template with `{query}` and `{context}`, or `(query, documents) -> input`."""

DEFAULT_PROMPT = (
    "Answer the question using only the document below. Reply with the answer only, "
    "as briefly as possible.\n\nDocument:\n{context}\n\nQuestion: {query}\nAnswer:"
)
"""The prompt the adapters send unless told otherwise; `{context}` is the document text."""

_PROMPT_FIELDS = frozenset({"query", "context"})


@runtime_checkable
class AsyncTextGenerator(Protocol):
    """A text generator that can also run from async code (all of ours can)."""

    async def agenerate(self, inputs: Mapping[str, Sequence[str]]) -> dict[str, str]:
        """Generate one output per query, concurrently."""
        ...


@dataclass(frozen=True, slots=True)
class Generation:
    """One model output and the tokens it cost (0 when the model does not say)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


def _check_concurrency(max_concurrency: int) -> int:
    """The limit, if it is a positive int; else a ValueError naming it."""
    if (
        isinstance(max_concurrency, bool)
        or not isinstance(max_concurrency, int)
        or max_concurrency < 1
    ):
        raise ValueError(f"max_concurrency must be a positive integer, got {max_concurrency!r}")
    return max_concurrency


def _check_prompt(prompt: PromptSpec) -> PromptSpec:
    """The prompt, if it is a callable or a template using only {query} and {context}."""
    if callable(prompt):
        return prompt
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str template or a callable, got {type(prompt).__name__}")
    try:
        fields = {name for _, name, _, _ in string.Formatter().parse(prompt) if name is not None}
    except ValueError as error:
        raise ValueError(f"prompt is not a valid str.format template: {error}") from error
    unknown = sorted(fields - _PROMPT_FIELDS)
    if unknown:
        raise ValueError(
            f"prompt template uses unknown field(s) {unknown}; only {{query}} and {{context}} "
            "are filled in (double other braces: {{ and }})"
        )
    return prompt


class BatchedGenerator(ABC):
    """One model call per query, at most `max_concurrency` calls in flight across all callers.

    Subclasses implement `_acall(model_input) -> Generation`; the prompt is built here from
    `prompt` (a template with `{query}` and `{context}`, or a callable). Usable as the reference's
    `text_generator` (sync `__call__`) and from async code (`agenerate`, `agenerate_one`).
    """

    def __init__(self, *, prompt: PromptSpec = DEFAULT_PROMPT, max_concurrency: int = 8) -> None:
        self.prompt = _check_prompt(prompt)
        self.max_concurrency = _check_concurrency(max_concurrency)
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._limits = weakref.WeakKeyDictionary()
        self._limits_lock = threading.Lock()

    @property
    def concurrent(self) -> bool:
        """True when calls overlap; False makes `erag_score` call it rank by rank, in order."""
        return True

    def _limit(self) -> asyncio.Semaphore:
        """The semaphore of the running event loop (a semaphore cannot cross loops)."""
        loop = asyncio.get_running_loop()
        with self._limits_lock:
            limit = self._limits.get(loop)
            if limit is None:
                limit = self._limits[loop] = asyncio.Semaphore(self.max_concurrency)
            return limit

    def build_prompt(self, query: str, documents: Sequence[str]) -> Any:
        """The model input for one query and its documents (joined by blank lines)."""
        if isinstance(self.prompt, str):
            return self.prompt.format(query=query, context="\n\n".join(documents))
        return self.prompt(query, documents)

    @abstractmethod
    async def _acall(self, model_input: Any) -> Generation:
        """Call the model once."""

    async def agenerate_one(self, query: str, documents: Sequence[str]) -> Generation:
        """Generate the output for one query from its documents, within the concurrency limit."""
        model_input = self.build_prompt(query, documents)
        async with self._limit():
            return await self._acall(model_input)

    async def agenerate(self, inputs: Mapping[str, Sequence[str]]) -> dict[str, str]:
        """Generate one output per query, concurrently; the reference contract, async."""
        queries = list(inputs)
        results = await asyncio.gather(*(self.agenerate_one(q, inputs[q]) for q in queries))
        return {query: result.text for query, result in zip(queries, results, strict=True)}

    async def aclose(self) -> None:  # noqa: B027  # optional hook: most adapters own nothing
        """Release what was opened for the running event loop (e.g. our own HTTP client)."""

    def run_sync(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine that uses this generator in a fresh loop, then `aclose` in that loop."""

        async def session() -> T:
            try:
                return await coroutine
            finally:
                await self.aclose()

        return run_sync(session())

    def __call__(self, inputs: Mapping[str, Sequence[str]]) -> dict[str, str]:
        """Generate one output per query; the reference's `text_generator` contract."""
        return self.run_sync(self.agenerate(inputs))


PerQueryFunction: TypeAlias = Callable[[str, Sequence[str]], str | Awaitable[str]]
"""`(query, documents) -> text`, sync or async: what the reference's batchify helper wraps."""


class FunctionGenerator(BatchedGenerator):
    """Wraps a per-query function `(query, documents) -> text` (sync or async) as a generator.

    With `max_concurrency=1` and a sync function, calling it runs the function once per query in
    order, in the caller's thread: exactly the reference's `batchify_text_generator`. Otherwise
    sync functions run in worker threads, async ones on the loop, at most `max_concurrency` at once.
    """

    def __init__(self, function: PerQueryFunction, *, max_concurrency: int = 1) -> None:
        if not callable(function):
            raise TypeError(f"function must be callable, got {type(function).__name__}")
        super().__init__(max_concurrency=max_concurrency)
        self.function = function
        self._is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            type(function).__call__
        )
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()

    def _threads(self) -> concurrent.futures.ThreadPoolExecutor:
        """Our own worker threads, as many as the limit (the loop's default pool may be smaller)."""
        with self._executor_lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    self.max_concurrency, thread_name_prefix="groundwire-erag"
                )
            return self._executor

    @property
    def concurrent(self) -> bool:
        """False for a sync function with `max_concurrency=1`: the reference's sequential loop."""
        return self._is_async or self.max_concurrency > 1

    async def _acall(self, model_input: Any) -> Generation:
        """Run the function on the loop (async) or in our worker threads (sync)."""
        query, documents = model_input
        if self._is_async:
            result = await self.function(query, documents)  # type: ignore[misc]
        else:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(self._threads(), self.function, query, documents)
        return Generation(self._text(result, query))

    def build_prompt(self, query: str, documents: Sequence[str]) -> Any:
        """The function gets the query and documents themselves, not a formatted prompt."""
        return (query, documents)

    @staticmethod
    def _text(result: object, query: str) -> str:
        """The function's result, checked to be a str."""
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise TypeError("the generator function returned an awaitable: define it `async def`")
        if not isinstance(result, str):
            raise TypeError(
                f"the generator function returned {type(result).__name__} for query {query!r}, "
                "expected str"
            )
        return result

    def __call__(self, inputs: Mapping[str, Sequence[str]]) -> dict[str, str]:
        """Sequential and in the caller's thread when that is what was asked for."""
        if self._is_async or self.max_concurrency > 1:
            return super().__call__(inputs)
        return {
            query: self._text(self.function(query, documents), query)
            for query, documents in inputs.items()
        }


def batchify_text_generator(
    function: PerQueryFunction, *, max_concurrency: int = 1
) -> FunctionGenerator:
    """The reference's `batchify_text_generator`, plus optional concurrency and async functions."""
    return FunctionGenerator(function, max_concurrency=max_concurrency)
