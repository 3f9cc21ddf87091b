"""docs/offline.md's Python snippets run as pasted: saved as a script and run with the venv."""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
from pathlib import Path

from groundwire.offline import rescore
from tests.docs._markdown import ROOT, blocks
from tests.offline._cli_files import write_turns


def test_the_first_python_snippet_runs_as_a_script_with_two_workers(tmp_path: Path) -> None:
    """The `workers=2` snippet, run as `python script.py`, scores every turn and prints lines."""
    snippet = blocks("docs/offline.md", "python")[0]
    assert "workers=2" in snippet.text
    plain = write_turns([f"question {i}" for i in range(4)], tmp_path / "t.jsonl")
    (tmp_path / "traces.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    script = tmp_path / "snippet.py"
    script.write_text(snippet.text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "BrokenProcessPool" not in done.stderr and "Traceback" not in done.stderr
    assert done.stdout.startswith("4 {'quoted_spans':"), done.stdout
    assert "scored 4 turns" in done.stdout
    assert len((tmp_path / "scores.jsonl").read_text().splitlines()) == 4


def _shape(line: str) -> re.Pattern[str]:
    """A documented output line as a pattern: its words exact, its numbers any numbers."""
    parts = re.split(r"\d+(?:\.\d+)?", line)
    return re.compile(r"\d+(?:\.\d+)?".join(re.escape(part) for part in parts) + r"$")


def test_the_documented_summary_lines_are_the_real_ones(tmp_path: Path) -> None:
    """The summary shown under "the summary at the end gives the counts" has the real wording."""
    text = (ROOT / "docs" / "offline.md").read_text(encoding="utf-8")
    shown = next(b for b in blocks("docs/offline.md", "") if b.text.startswith("read "))
    traces = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    real = rescore(traces, ["quoted_spans"], tmp_path / "o.jsonl").lines()
    for line in shown.text.splitlines():
        assert any(_shape(line).match(got) for got in real), (line, real)
    assert "The summary at the end gives the counts" in " ".join(text.split())
