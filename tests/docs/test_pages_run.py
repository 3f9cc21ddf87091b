"""Every python, bash and console block of README.md and the pages in PAGES runs as pasted.

The blocks run in a folder holding the files they name, against real servers where they need
one (an OpenAI-protocol judge and model, an OTLP receiver standing in for `collector:4318`). A
block not meant to run says so with Sybil's skip marker and a reason; any other outcome than
"ran" or "skipped by its marker" fails, naming the block's line and its output.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from groundwire.testing import OpenAIServer, OtlpHttpReceiver
from tests.docs._runner import Workspace, clean_environment, run_page
from tests.docs._workspace import judge_env, model_reply, write_named_files

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
    "docs/online.md": 4,
    "docs/calibrate.md": 7,
}
"""Page -> how many of its blocks must run, invisible set-ups and checks included (the rest
carry a skip marker)."""


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Workspace]:
    """The files the docs name, a judge and model server, and a receiver for `collector`."""
    write_named_files(tmp_path)
    with OpenAIServer(model_reply) as model, OtlpHttpReceiver() as collector:
        env = clean_environment(**judge_env(model.base_url))
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
