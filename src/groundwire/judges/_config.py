"""Judge configuration: which OpenAI-compatible server and model, and how hard to try.

Every option comes from an argument or, failing that, the environment: `GROUNDWIRE_JUDGE_*`
first, then the standard `OPENAI_*` variables, so any OpenAI-compatible server works (OpenAI,
Azure OpenAI's v1 endpoint, vLLM, Ollama, LiteLLM).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, get_args

from groundwire import semconv

__all__ = ["NOT_CONFIGURED_MESSAGE", "CacheKind", "JudgeConfig", "JudgeMode"]

CacheKind = Literal["memory", "disk", "off"]
"""Where judge replies are cached: in memory (online), on disk (offline re-scoring), or not."""
JudgeMode = Literal["tools", "json", "md_json"]
"""How instructor asks for structured output: tool calls, JSON mode, or JSON in a code block."""

DEFAULT_MODEL = "gpt-4o-mini"
"""Model used when a server or key is configured but no model name is."""
_PLACEHOLDER_KEY = "unused"
"""Local servers (vLLM, Ollama) need no key, but the openai client insists on one."""

NOT_CONFIGURED_MESSAGE = (
    f"no judge configured: set {semconv.ENV_JUDGE_MODEL} and {semconv.ENV_JUDGE_BASE_URL} "
    f"and/or {semconv.ENV_JUDGE_API_KEY} (or OPENAI_MODEL / OPENAI_BASE_URL / OPENAI_API_KEY), "
    "or pass judge=JudgeConfig(...); LLM-judge evaluators are skipped until then"
)
"""The one message logged (once) and put on skipped scores when no judge is configured."""


def _positive(name: str, value: float, *, allow_zero: bool = False) -> None:
    """Reject a non-number, NaN or negative (or zero unless allowed) option, naming it."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise ValueError(f"JudgeConfig.{name} must be a number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"JudgeConfig.{name} must be {bound}, got {value!r}")


@dataclass(frozen=True, slots=True)
class JudgeConfig:
    """Where the judge lives and how calls behave; hashable, so equal configs share a client."""

    model: str = DEFAULT_MODEL
    base_url: str | None = None
    """None means OpenAI's own API."""
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 30.0
    """Per-call deadline (one HTTP attempt), seconds."""
    max_concurrency: int = 8
    """Judge calls in flight at once, per event loop."""
    max_retries: int = 3
    """Retries of one call after 429, 408, 409, 5xx, a timeout, a lost connection or a bad body."""
    backoff_base_s: float = 0.5
    """First backoff delay; doubles per retry (with jitter) up to `backoff_max_s`."""
    backoff_max_s: float = 20.0
    max_retry_after_s: float = 60.0
    """A Retry-After longer than this is not waited for: the call fails instead."""
    cache: CacheKind = "memory"
    cache_dir: str | None = None
    """Directory of the disk cache (default: `$XDG_CACHE_HOME/groundwire/judges`)."""
    cache_size: int = 10_000
    """Entries kept by the in-memory cache (least recently used are evicted)."""
    mode: JudgeMode = "tools"

    def __post_init__(self) -> None:
        """Validate every option; errors name the option."""
        if not isinstance(self.model, str) or not self.model.strip():
            raise ValueError(f"JudgeConfig.model must be a non-empty string, got {self.model!r}")
        _positive("timeout_s", self.timeout_s)
        _positive("backoff_base_s", self.backoff_base_s, allow_zero=True)
        _positive("backoff_max_s", self.backoff_max_s, allow_zero=True)
        _positive("max_retry_after_s", self.max_retry_after_s, allow_zero=True)
        for name in ("max_concurrency", "cache_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"JudgeConfig.{name} must be a positive integer, got {value!r}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int):
            raise ValueError(
                f"JudgeConfig.max_retries must be an integer, got {self.max_retries!r}"
            )
        if self.max_retries < 0:
            raise ValueError(f"JudgeConfig.max_retries must be >= 0, got {self.max_retries!r}")
        if self.cache not in get_args(CacheKind):
            raise ValueError(
                f"JudgeConfig.cache must be one of {get_args(CacheKind)}, got {self.cache!r}"
            )
        if self.mode not in get_args(JudgeMode):
            raise ValueError(
                f"JudgeConfig.mode must be one of {get_args(JudgeMode)}, got {self.mode!r}"
            )

    @property
    def effective_api_key(self) -> str:
        """The key sent to the server (a placeholder for keyless local servers)."""
        return self.api_key or _PLACEHOLDER_KEY

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> JudgeConfig | None:
        """Build a config from `overrides` then the environment; None when no judge is configured.

        A judge counts as configured when a model, a base URL or an API key is given anywhere.
        """
        env = os.environ if env is None else env
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown judge option(s) {unknown}; known: {sorted(known)}")
        given = {k: v for k, v in overrides.items() if v is not None}
        for name, (variables, parse) in _ENV.items():
            if name in given:
                continue
            for variable in variables:
                raw = env.get(variable, "").strip()
                if raw:
                    given[name] = parse(variable, raw)
                    break
        if not any(given.get(name) for name in ("model", "base_url", "api_key")):
            return None
        if given.get("cache_dir") and "cache" not in given:
            given["cache"] = "disk"
        return cls(**given)

    def with_options(self, **changes: Any) -> JudgeConfig:
        """A copy with some options changed (validated again)."""
        return replace(self, **changes)


def _text(variable: str, raw: str) -> str:
    """A text variable, as is."""
    return raw


def _float(variable: str, raw: str) -> float:
    """A number variable; the error names the variable."""
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"environment variable {variable} must be a number, got {raw!r}") from None


def _int(variable: str, raw: str) -> int:
    """An integer variable; the error names the variable."""
    try:
        return int(raw)
    except ValueError:
        raise ValueError(
            f"environment variable {variable} must be an integer, got {raw!r}"
        ) from None


def _choice(choices: tuple[str, ...]) -> Any:
    """A parser accepting one of `choices` (case-insensitive)."""

    def parse(variable: str, raw: str) -> str:
        """The lower-cased value, if allowed."""
        value = raw.lower()
        if value not in choices:
            raise ValueError(
                f"environment variable {variable} must be one of {choices}, got {raw!r}"
            )
        return value

    return parse


_ENV: dict[str, tuple[tuple[str, ...], Any]] = {
    "model": ((semconv.ENV_JUDGE_MODEL, "OPENAI_MODEL"), _text),
    "base_url": ((semconv.ENV_JUDGE_BASE_URL, "OPENAI_BASE_URL"), _text),
    "api_key": ((semconv.ENV_JUDGE_API_KEY, "OPENAI_API_KEY"), _text),
    "timeout_s": ((semconv.ENV_JUDGE_TIMEOUT,), _float),
    "max_concurrency": ((semconv.ENV_JUDGE_MAX_CONCURRENCY,), _int),
    "max_retries": ((semconv.ENV_JUDGE_MAX_RETRIES,), _int),
    "cache": ((semconv.ENV_JUDGE_CACHE,), _choice(get_args(CacheKind))),
    "cache_dir": ((semconv.ENV_JUDGE_CACHE_DIR,), _text),
    "mode": ((semconv.ENV_JUDGE_MODE,), _choice(get_args(JudgeMode))),
}
