"""docs/phoenix.md's blocks run as pasted against a real Phoenix holding a project of turns.

The page's example addresses (`phoenix://127.0.0.1:6006/default`, `http://127.0.0.1:6006`) are
pointed at the test's Phoenix and a fresh project; the judge is a scripted OpenAI-protocol server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwire.testing import OpenAIServer
from tests.docs._runner import Workspace, clean_environment, run_page
from tests.docs._workspace import judge_env, model_reply
from tests.phoenix._app import read_annotations, stored_spans
from tests.phoenix.conftest import new_project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_every_block_of_the_phoenix_page_runs_or_says_why_not(phoenix: str, tmp_path: Path) -> None:
    """Each block ran or carries a skip marker; the CLI block annotated the project's turns."""
    project, _ = new_project(phoenix)
    host = phoenix.removeprefix("http://")
    with OpenAIServer(model_reply) as model:
        hosts = {
            "phoenix://127.0.0.1:6006/default": f"phoenix://{host}/{project}",
            "http://127.0.0.1:6006": phoenix,
        }
        outcomes = run_page(
            "docs/phoenix.md",
            Workspace(tmp_path, clean_environment(**judge_env(model.base_url)), hosts),
        )
    failed = [f"docs/phoenix.md:{o.line}: {o.detail}" for o in outcomes if o.kind == "failed"]
    assert not failed, "\n\n".join(failed)
    assert all(o.detail.strip() for o in outcomes if o.kind == "skipped")
    assert sum(o.kind == "ran" for o in outcomes) == 6, outcomes
    roots = [s["span_id"] for s in stored_spans(phoenix, project) if s["parent_span_id"] is None]
    notes = read_annotations(phoenix, project, roots)
    assert {(a["name"], a["result"]["score"]) for a in notes if a["name"] == "groundedness"} == {
        ("groundedness", 1.0)
    }
