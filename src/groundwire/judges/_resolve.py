"""Find the judge an evaluator should use, and say once (not per turn) when there is none."""

from __future__ import annotations

import logging
import threading
from typing import Any

from groundwire import semconv
from groundwire._types import Score
from groundwire.judges._client import JudgeClient
from groundwire.judges._config import NOT_CONFIGURED_MESSAGE, JudgeConfig

__all__ = ["JudgeNotConfiguredError", "resolve_judge", "shared_judge", "skipped_score"]

logger = logging.getLogger("groundwire.judges")

_lock = threading.Lock()
_shared: dict[JudgeConfig, JudgeClient] = {}
_warned = False


class JudgeNotConfiguredError(RuntimeError):
    """Raised by stand-alone judge functions (e.g. `audit_citation`) when no judge is configured."""

    def __init__(self) -> None:
        super().__init__(NOT_CONFIGURED_MESSAGE)


def shared_judge(config: JudgeConfig) -> JudgeClient:
    """The process-wide client for `config`: evaluators with equal configs share its
    concurrency limit and in-memory cache."""
    with _lock:
        client = _shared.get(config)
        if client is None:
            client = _shared[config] = JudgeClient(config)
        return client


def resolve_judge(
    judge: JudgeClient | JudgeConfig | None = None, **options: Any
) -> JudgeClient | None:
    """A client from an explicit client or config, else from `options` and the environment.

    Returns None when no judge is configured anywhere (the evaluator then skips).
    """
    if isinstance(judge, JudgeClient):
        if options:
            raise TypeError(f"pass judge options {sorted(options)} or a JudgeClient, not both")
        return judge
    if isinstance(judge, JudgeConfig):
        return shared_judge(judge.with_options(**options) if options else judge)
    if judge is not None:
        raise TypeError(
            f"judge must be a JudgeClient, a JudgeConfig or None, got {type(judge).__name__}"
        )
    config = JudgeConfig.from_env(**options)
    return None if config is None else shared_judge(config)


def skipped_score(name: str) -> Score:
    """The score of a judge evaluator with no judge: value None, label `skipped`; logs once."""
    global _warned
    with _lock:
        first, _warned = not _warned, True
    if first:
        logger.warning(NOT_CONFIGURED_MESSAGE)
    return Score.not_applicable(name, semconv.LABEL_SKIPPED, NOT_CONFIGURED_MESSAGE)
