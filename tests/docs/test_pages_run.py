"""Every python, bash and console block of README.md and docs/offline.md runs as pasted.

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

import pytest

from groundwire.testing import OpenAIServer, OtlpHttpReceiver
from groundwire.testing._openai_server import structured
from tests.docs._runner import Workspace, clean_environment, run_page
from tests.offline._cli_files import write_turns

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

PAGES = {"README.md": 4, "docs/offline.md": 5}
"""Page -> how many of its blocks must run (the rest carry a skip marker)."""


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
    with OpenAIServer(structured({"rating": 2})) as model, OtlpHttpReceiver() as collector:
        env = clean_environment(
            GROUNDWIRE_JUDGE_BASE_URL=model.base_url,
            GROUNDWIRE_JUDGE_MODEL="judge-1",
            GROUNDWIRE_JUDGE_API_KEY="test-key",
            OPENAI_BASE_URL=model.base_url,
            OPENAI_API_KEY="test-key",
        )
        yield Workspace(tmp_path, env, {"http://collector:4318": collector.endpoint})


@pytest.mark.parametrize("page", list(PAGES))
def test_every_block_runs_or_says_why_not(page: str, workspace: Workspace) -> None:
    """Each block ran, or was skipped by its marker with a reason; none failed."""
    outcomes = run_page(page, workspace)
    failed = [f"{page}:{o.line}: {o.detail}" for o in outcomes if o.kind == "failed"]
    assert not failed, "\n\n".join(failed)
    assert all(o.detail.strip() for o in outcomes if o.kind == "skipped")
    assert sum(o.kind == "ran" for o in outcomes) == PAGES[page], outcomes
