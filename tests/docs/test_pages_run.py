"""Every python, bash and console block of README.md and the pages in PAGES runs as pasted.

The blocks run in a folder holding the files they name, against real servers where they need
one (an OpenAI-protocol judge and model, an OTLP receiver standing in for `collector:4318`). A
block not meant to run says so with Sybil's skip marker and a reason; any other outcome than
"ran" or "skipped by its marker" fails, naming the block's line and its output.
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundwire.testing import OpenAIServer, OtlpHttpReceiver, Reply, structured
from tests.docs._runner import Workspace, clean_environment, run_page
from tests.offline._cli_files import write_turns

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

PAGES = {
    "README.md": 4,
    "docs/offline.md": 5,
    "docs/assembly.md": 1,
    "docs/demo.md": 1,
    "docs/erag.md": 6,
    "docs/judges.md": 3,
    "docs/quote_verification.md": 2,
    "docs/quoted_spans.md": 4,
    "docs/langchain.md": 6,
    "docs/llamaindex.md": 2,
    "docs/gateway.md": 0,
    "docs/reliability.md": 0,
}
"""Page -> how many of its blocks must run, invisible set-ups and checks included (the rest
carry a skip marker)."""


def _model_reply(request: Any) -> Reply:
    """The judge and model behind every snippet: each structured request gets a valid answer
    of the shape it asked for (a rating, claims, an audit verdict)."""
    asked = json.dumps(request)
    if "AuditReply" in asked:
        return structured(
            {
                "verdict": "partially_supported",
                "supporting_phrase": "Paris has about 2.1 million residents",
                "missing": "the exact figure of 2 million",
                "basis": "The span gives about 2.1 million, not 2 million.",
            }
        )(request)
    if "ClaimList" in asked:
        return structured({"claims": ["Paris has 2 million people [1]."]})(request)
    return structured({"rating": 2})(request)


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """The files the docs name, a judge and model server, and a receiver for `collector`."""
    plain = write_turns([f"question {i}" for i in range(4)], tmp_path / "traces.jsonl")
    packed = gzip.compress(plain.read_bytes())
    (tmp_path / "traces.jsonl.gz").write_bytes(packed)
    (tmp_path / "big.jsonl.gz").write_bytes(packed)
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "app-1.jsonl.gz").write_bytes(packed)
    (tmp_path / "otel-traces").mkdir()
    shutil.copy(plain, tmp_path / "otel-traces" / "traces-2026-11-01.jsonl")
    shutil.copy(plain, tmp_path / "groundwire-telemetry.jsonl")
    gold = [{"query": "question 0", "expected": ["blue"]}]
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    with OpenAIServer(_model_reply) as model, OtlpHttpReceiver() as collector:
        env = clean_environment(
            GROUNDWIRE_JUDGE_BASE_URL=model.base_url,
            GROUNDWIRE_JUDGE_MODEL="judge-1",
            GROUNDWIRE_JUDGE_API_KEY="test-key",
            OPENAI_BASE_URL=model.base_url,
            OPENAI_API_KEY="test-key",
        )
        hosts = {
            "http://collector:4318": collector.endpoint,
            "http://localhost:11434/v1": model.base_url,  # judges.md's local Ollama
        }
        yield Workspace(tmp_path, env, hosts)


@pytest.mark.parametrize("page", list(PAGES))
def test_every_block_runs_or_says_why_not(page: str, workspace: Workspace) -> None:
    """Each block ran, or was skipped by its marker with a reason; none failed."""
    outcomes = run_page(page, workspace)
    failed = [f"{page}:{o.line}: {o.detail}" for o in outcomes if o.kind == "failed"]
    assert not failed, "\n\n".join(failed)
    assert all(o.detail.strip() for o in outcomes if o.kind == "skipped")
    assert sum(o.kind == "ran" for o in outcomes) == PAGES[page], outcomes
