"""Take docs/img/phoenix-annotations.png: Phoenix's trace view with groundwire's annotations.

    python -m tests.phoenix.screenshot docs/img/phoenix-annotations.png

Starts a real Phoenix (the tests' cached venv), traces the LangChain app into it, runs
`groundwire rescore phoenix://... --annotate-phoenix` with quoted_spans and groundedness (judged
by a scripted OpenAI-protocol server) and screenshots the first trace with headless Chromium.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.testing import OpenAIServer, structured
from tests.phoenix._app import QUESTIONS, run_app, stored_spans, wait_for_spans
from tests.phoenix._server import phoenix_server

_CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,900",
    "--virtual-time-budget=15000",
)


def main(target: Path) -> None:
    """Start Phoenix, fill and annotate a project, screenshot its first trace into `target`."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium not found (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as folder, phoenix_server(Path(folder)) as base:
        project = "rag-app"
        run_app(base, project, QUESTIONS)
        wait_for_spans(base, project, 9 * len(QUESTIONS))
        with OpenAIServer(structured({"rating": 2})) as judge:
            os.environ.update(
                GROUNDWIRE_JUDGE_BASE_URL=judge.base_url,
                GROUNDWIRE_JUDGE_MODEL="judge-1",
                GROUNDWIRE_JUDGE_API_KEY="test-key",
            )
            url = f"phoenix://{base.removeprefix('http://')}/{project}"
            out = str(Path(folder) / "scores.jsonl")
            result = CliRunner().invoke(
                app,
                [
                    *("rescore", url, "-e", "quoted_spans,groundedness", "-o", out),
                    *("-q", "--annotate-phoenix"),
                ],
            )
            if result.exit_code != 0:
                raise SystemExit(result.output)
        project_id = httpx.get(f"{base}/v1/projects/{project}").json()["data"]["id"]
        roots = [s for s in stored_spans(base, project) if s["parent_span_id"] is None]
        trace_id = roots[-1]["trace_id"]  # the first question (the listing is newest first)
        subprocess.run(
            [
                chromium,
                *_CHROMIUM_FLAGS,
                f"--user-data-dir={Path(folder) / 'chromium'}",
                f"--screenshot={target.resolve()}",
                f"{base}/projects/{project_id}/traces/{trace_id}",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
    print(f"wrote {target}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/img/phoenix-annotations.png"))
