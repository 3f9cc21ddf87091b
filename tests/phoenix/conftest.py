"""One real Phoenix server for the Phoenix tests, and a project of traced LangChain turns in it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export import SpanExporter

from groundwire.testing import OpenAIServer, structured
from tests.phoenix._app import QUESTIONS, run_app, stored_spans, wait_for_spans
from tests.phoenix._server import phoenix_server


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a real Phoenix server (own venv, loopback, temporary SQLite)."""
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as base_url:
        yield base_url


def new_project(
    base_url: str, questions: dict[str, str] = QUESTIONS, also: SpanExporter | None = None
) -> tuple[str, int]:
    """A fresh Phoenix project holding one traced turn per question; (name, span count)."""
    project = f"rag-{uuid.uuid4().hex[:8]}"
    run_app(base_url, project, questions, also)
    spans_per_turn = 9  # what OpenInference records for this chain (checked below)
    wait_for_spans(base_url, project, spans_per_turn * len(questions))
    count = len(stored_spans(base_url, project))
    assert count == spans_per_turn * len(questions)
    return project, count


@pytest.fixture(scope="module")
def project(phoenix: str) -> tuple[str, int]:
    """A project of three traced RAG turns, shared by the module's read-only tests."""
    return new_project(phoenix)


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    """An OpenAI-protocol judge on loopback rating every answer fully grounded (2 of 2)."""
    with OpenAIServer(structured({"rating": 2})) as server:
        monkeypatch.setenv("GROUNDWIRE_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("GROUNDWIRE_JUDGE_MODEL", "judge-1")
        monkeypatch.setenv("GROUNDWIRE_JUDGE_API_KEY", "test-key")
        yield server
