"""The judge client: structured output from any OpenAI-compatible server, through instructor.

One `JudgeClient` per configuration does the plumbing every judge evaluator needs: a concurrency
limit, a per-call timeout, retries with backoff on transient failures (honouring Retry-After),
temperature 0, token accounting and a reply cache. Invalid replies are not retried here: the
caller decides (the groundedness judges re-ask up to their own `max_retries`).

A circuit breaker (`groundwire._breaker`) watches connection-level failures (refused, DNS, TLS,
timeout): after `BREAKER_THRESHOLD` in a row the client stops calling for `BREAKER_COOLDOWN_S`
and raises `JudgeUnreachableError` at once, which the evaluator boundary turns into a `skipped`
score with reason `judge_unreachable`; then one call probes the server and, if it answers, calls
resume. A server that answers, even with 429 or 5xx, is reachable: those keep the usual retries
(and Retry-After).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from groundwire._breaker import CLOSED, HALF_OPEN, CircuitBreaker
from groundwire._evaluator import JUDGE_UNREACHABLE, SkipEvaluation
from groundwire.judges._cache import DiskCache, MemoryCache, ResponseCache, cache_key
from groundwire.judges._config import JudgeConfig
from groundwire.judges._retry import (
    backoff_delay,
    is_connection_error,
    is_retryable,
    retry_after_s,
)

__all__ = [
    "BREAKER_COOLDOWN_S",
    "BREAKER_THRESHOLD",
    "JUDGE_UNREACHABLE",
    "InvalidJudgeOutputError",
    "JudgeCallError",
    "JudgeClient",
    "JudgeError",
    "JudgeReply",
    "JudgeUnreachableError",
    "Usage",
]

M = TypeVar("M", bound=BaseModel)

BREAKER_THRESHOLD = 5
"""Connection-level failures in a row (over all calls to one server) that open the breaker."""
BREAKER_COOLDOWN_S = 30.0
"""Seconds the client stops calling an unreachable judge before probing it again."""
_PROBE_POLL_S = 0.02


@dataclass(frozen=True, slots=True)
class Usage:
    """LLM tokens spent: `input` (prompt) and `output` (completion)."""

    input: int = 0
    output: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input + other.input, self.output + other.output)

    def as_dict(self) -> dict[str, int]:
        """The `Score.usage` shape: `{"input": n, "output": m}`."""
        return {"input": self.input, "output": self.output}

    @classmethod
    def of(cls, usage: Any) -> Usage:
        """Read an OpenAI `CompletionUsage` (or None) leniently."""
        if usage is None:
            return cls()
        return cls(
            int(getattr(usage, "prompt_tokens", 0) or 0),
            int(getattr(usage, "completion_tokens", 0) or 0),
        )


@dataclass(frozen=True, slots=True)
class JudgeReply(Generic[M]):
    """A validated judge reply with the tokens it cost (zero when served from the cache)."""

    value: M
    usage: Usage
    cached: bool
    attempts: int
    """HTTP attempts made (0 for a cache hit)."""


class JudgeError(Exception):
    """A judge call that gave no valid reply; `usage` counts the tokens it still spent."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


class InvalidJudgeOutputError(JudgeError):
    """The judge answered, but not in the requested shape (e.g. a rating outside 0-2)."""


class JudgeCallError(JudgeError):
    """The call itself failed: a non-retryable status, or retries exhausted."""


class JudgeUnreachableError(SkipEvaluation):
    """The judge server cannot be reached and the breaker is open: the evaluation is skipped.

    Not a `JudgeError`, so that code catching judge errors per call lets it through to the
    evaluator boundary, which records a `skipped` score (reason `judge_unreachable`).
    """

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message, reason=JUDGE_UNREACHABLE)
        self.usage = usage or Usage()


class _LoopState:
    """The openai/instructor clients and the concurrency limit bound to one event loop."""

    def __init__(self, config: JudgeConfig) -> None:
        import instructor
        import openai

        self.openai = openai.AsyncOpenAI(
            api_key=config.effective_api_key,
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=0,  # retries are ours, so backoff and Retry-After follow our config
        )
        modes = {
            "tools": instructor.Mode.TOOLS,
            "json": instructor.Mode.JSON,
            "md_json": instructor.Mode.MD_JSON,
        }
        self.instructor = instructor.from_openai(self.openai, mode=modes[config.mode])
        self.semaphore = asyncio.Semaphore(config.max_concurrency)
        self.closer: AsyncGenerator[None, None] | None = None


async def _close_with_loop(state: _LoopState) -> AsyncGenerator[None, None]:
    """Suspended for the loop's lifetime; `asyncio.run` closes live async generators at shutdown
    (PEP 525 hooks), which closes the HTTP client while its loop still runs."""
    try:
        yield
    finally:
        await state.openai.close()


_schemas: dict[type[BaseModel], type[BaseModel]] = {}
_schemas_lock = threading.Lock()


def _schema_for(response_model: type[M]) -> type[M]:
    """Instructor's wrapped form of a reply model, built once (instructor would rebuild the
    class, a pydantic model creation, on every call otherwise)."""
    with _schemas_lock:
        wrapped = _schemas.get(response_model)
        if wrapped is None:
            import instructor

            wrapped = _schemas[response_model] = instructor.openai_schema(response_model)
    return wrapped  # type: ignore[return-value]


def _build_cache(config: JudgeConfig) -> ResponseCache | None:
    """The cache the config asks for (None when off)."""
    if config.cache == "off":
        return None
    if config.cache == "disk":
        return DiskCache(config.cache_dir)
    return MemoryCache(config.cache_size)


def _describe(error: BaseException) -> str:
    """`Type: message`, as errors are recorded in scores."""
    return f"{type(error).__name__}: {error}"


class JudgeClient:
    """Asks an OpenAI-compatible model for structured replies; safe to share across evaluators.

    Clients are created per event loop (each `asyncio.run` gets its own), so the same
    `JudgeClient` works from `groundwire.evaluate()` in sync code and from a long-lived runner.
    """

    def __init__(
        self,
        config: JudgeConfig,
        *,
        cache: ResponseCache | None = None,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        if not isinstance(config, JudgeConfig):
            raise TypeError(f"config must be a JudgeConfig, got {type(config).__name__}")
        self.config = config
        self.cache: ResponseCache | None = cache if cache is not None else _build_cache(config)
        self.breaker = breaker or CircuitBreaker(
            f"judge server {config.base_url or 'api.openai.com'}",
            threshold=BREAKER_THRESHOLD,
            cooldown_s=BREAKER_COOLDOWN_S,
        )
        """Stops calls to a server that cannot be reached; shared by every use of this client."""
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JudgeClient({self.config!r})"

    @property
    def model(self) -> str:
        """The judge model name."""
        return self.config.model

    async def _state(self) -> _LoopState:
        """This loop's clients and limit, created (and tied to the loop's shutdown) on first use."""
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._states.get(loop)
            if state is not None:
                return state
            state = self._states[loop] = _LoopState(self.config)
        state.closer = _close_with_loop(state)
        await anext(state.closer)
        return state

    async def ask(
        self,
        response_model: type[M],
        messages: Sequence[Mapping[str, str]],
        *,
        prompt_version: str,
        inputs: Mapping[str, Any],
    ) -> JudgeReply[M]:
        """One structured judge call: cache, then up to `1 + max_retries` HTTP attempts.

        `prompt_version` and `inputs` (everything the prompt was built from) form the cache key.
        Raises `InvalidJudgeOutputError` for a reply that does not validate and `JudgeCallError`
        when the call fails; both carry the tokens spent. Raises `JudgeUnreachableError` without
        calling while the breaker is open (and when a failure opens it).
        """
        key = None
        if self.cache is not None:
            key = cache_key(prompt_version, self.config.model, response_model.__name__, inputs)
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    return JudgeReply(response_model.model_validate_json(hit), Usage(), True, 0)
                except ValidationError:
                    pass  # a reply cached under an older schema: ask again
        state = await self._state()
        usage = Usage()
        config = self.config
        for retry in range(config.max_retries + 1):
            if not await self._admitted():
                raise JudgeUnreachableError(self._unreachable(), usage)
            try:
                error, value, spent = await self._attempt(state, response_model, messages)
            except BaseException:  # cancelled: no verdict on the server either way
                self.breaker.abandon()
                raise
            usage = usage + spent
            if error is not None and is_connection_error(error):
                self.breaker.failure(error)
                if self.breaker.state != CLOSED:
                    raise JudgeUnreachableError(self._unreachable(), usage) from error
            else:
                self.breaker.success()
            if value is not None:
                if key is not None and self.cache is not None:
                    self.cache.set(key, value.model_dump_json())
                return JudgeReply(value, usage, False, retry + 1)
            assert error is not None
            if isinstance(error, InvalidJudgeOutputError):
                raise InvalidJudgeOutputError(str(error), usage) from error.__cause__
            if not is_retryable(error) or retry == config.max_retries:
                attempts = f" after {retry + 1} attempts" if retry else ""
                raise JudgeCallError(
                    f"judge call failed{attempts}: {_describe(error)}", usage
                ) from error
            wait = retry_after_s(error)
            if wait is None:
                wait = backoff_delay(retry, config.backoff_base_s, config.backoff_max_s)
            elif wait > config.max_retry_after_s:
                raise JudgeCallError(
                    f"judge server asked to retry after {wait:.1f} s, more than "
                    f"max_retry_after_s={config.max_retry_after_s}: {_describe(error)}",
                    usage,
                ) from error
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _admitted(self) -> bool:
        """True when the breaker lets a call through. While another call probes the server,
        wait for its verdict (up to one call timeout) rather than skip: the calls of one
        evaluation (two judges, many claims) then recover together."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.timeout_s
        while self.breaker.state == HALF_OPEN and loop.time() < deadline:
            await asyncio.sleep(_PROBE_POLL_S)
        return self.breaker.allow()

    def _unreachable(self) -> str:
        """The explanation put on skipped scores."""
        return (
            f"{self.breaker.name} is unreachable; judge calls are skipped until it answers "
            f"(probed every {self.breaker.cooldown_s:.0f} s)"
        )

    async def _attempt(
        self,
        state: _LoopState,
        response_model: type[M],
        messages: Sequence[Mapping[str, str]],
    ) -> tuple[BaseException | None, M | None, Usage]:
        """One HTTP attempt: (error, None, usage) or (None, value, usage); never raises for
        failures of the call (cancellation still propagates)."""
        from instructor.core.exceptions import InstructorRetryException

        config = self.config
        try:
            async with state.semaphore:
                async with asyncio.timeout(config.timeout_s):
                    create = state.instructor.chat.completions.create_with_completion
                    value, completion = await create(
                        model=config.model,
                        response_model=_schema_for(response_model),
                        messages=[dict(m) for m in messages],  # type: ignore[misc]
                        temperature=0,
                        max_retries=0,  # one attempt: invalid replies are the caller's call
                    )
        except InstructorRetryException as error:
            spent = Usage.of(getattr(error, "total_usage", None))
            if error.failed_attempts:  # the model answered; the answer did not validate
                cause = error.__cause__ or error
                invalid = InvalidJudgeOutputError(f"invalid judge reply: {_describe(cause)}")
                invalid.__cause__ = cause
                return invalid, None, spent
            return error.__cause__ or error, None, spent
        except Exception as error:  # openai.APIError, TimeoutError, an unreadable body, ...
            return error, None, Usage()
        return None, value, Usage.of(getattr(completion, "usage", None))

    async def aclose(self) -> None:
        """Close the HTTP client bound to the running loop (others close with their loops)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            state = self._states.pop(loop, None)
        if state is not None and state.closer is not None:
            await state.closer.aclose()
