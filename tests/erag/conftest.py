"""Fixtures for the eRAG tests: a scripted OpenAI-protocol server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from groundwire.testing import OpenAIServer


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    """A running scripted OpenAI-compatible server, stopped after the test."""
    with OpenAIServer() as server:
        yield server
