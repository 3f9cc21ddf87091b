"""Fixtures for the judge tests: a scripted OpenAI-protocol server and a clean judge environment."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groundwire.testing import OpenAIServer

JUDGE_ENV = (
    "GROUNDWIRE_JUDGE_MODEL",
    "GROUNDWIRE_JUDGE_BASE_URL",
    "GROUNDWIRE_JUDGE_API_KEY",
    "GROUNDWIRE_JUDGE_TIMEOUT",
    "GROUNDWIRE_JUDGE_MAX_CONCURRENCY",
    "GROUNDWIRE_JUDGE_MAX_RETRIES",
    "GROUNDWIRE_JUDGE_CACHE",
    "GROUNDWIRE_JUDGE_CACHE_DIR",
    "GROUNDWIRE_JUDGE_MODE",
    "OPENAI_MODEL",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
)


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge tests never see the developer's own OpenAI settings."""
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A running scripted OpenAI-compatible server, stopped after the test."""
    with OpenAIServer() as server:
        yield server
