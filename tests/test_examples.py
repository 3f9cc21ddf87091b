"""Every script in examples/ runs offline with the venv's python and prints real results."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SCRIPTS = {
    "langchain_online": EXAMPLES / "langchain_online.py",
    "llamaindex_online": EXAMPLES / "llamaindex_online.py",
    "rescore_trace_file": EXAMPLES / "rescore_trace_file.py",
    "custom_evaluator_plugin": EXAMPLES / "custom_evaluator_plugin" / "run_plugin.py",
    "erag_qa": EXAMPLES / "erag_qa.py",
}
TIMEOUT_S = 90
"""Per script; each takes a few seconds alone, more on a busy shared machine."""


class Run:
    """One example's finished run: exit code, output, and the directory it ran in."""

    def __init__(self, returncode: int, stdout: str, stderr: str, cwd: Path) -> None:
        """Keep what the finished process left."""
        self.returncode, self.stdout, self.stderr, self.cwd = returncode, stdout, stderr, cwd

    @property
    def text(self) -> str:
        """Stdout with runs of whitespace collapsed (for phrases that may wrap)."""
        return " ".join(self.stdout.split())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Run]]:
    """All examples started at once (each in its own empty directory), then collected."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GROUNDWIRE_"))}
    env = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
    started = {}
    for name, script in SCRIPTS.items():
        cwd = tmp_path_factory.mktemp(name)
        process = subprocess.Popen(
            [sys.executable, str(script)],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started[name] = (process, cwd)
    finished = {}
    try:
        for name, (process, cwd) in started.items():
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
            finished[name] = Run(process.returncode, stdout, stderr, cwd)
        yield finished
    finally:
        for process, _ in started.values():
            if process.poll() is None:
                process.kill()
                process.wait()


def ok(runs: dict[str, Run], name: str) -> Run:
    """The named run, which must have exited 0."""
    run = runs[name]
    assert run.returncode == 0, f"{name} failed:\n{run.stderr[-3000:]}"
    return run


def test_every_example_has_a_docstring_saying_what_and_how_to_run() -> None:
    """Each script opens with a docstring naming what it shows and the command that runs it."""
    for name, script in SCRIPTS.items():
        source = script.read_text(encoding="utf-8")
        assert source.startswith('"""'), name
        docstring = source.split('"""')[1]
        assert "What it shows" in docstring, name
        assert f".venv/bin/python {script.relative_to(ROOT)}" in docstring, name


def test_langchain_online_sends_scores_to_the_collector(runs: dict[str, Run]) -> None:
    """The collector gets three scored turns; the invented quote scores 0 on both evaluators."""
    run = ok(runs, "langchain_online")
    assert "instrumented: ['groundwire_langchain']" in run.text
    assert run.stdout.count("\nQ: ") == 3
    assert (
        "For how long may books be borrowed? -> quote_verification=0.0, quoted_spans=0.0"
        in run.text
    )
    # the stand-in drops "hundred" of "four hundred volumes": a changed number, refused
    assert "What was the library in 1887? -> quote_verification=0.0, quoted_spans=0.0" in run.text
    assert "children of the turn spans): 3" in run.text
    assert "groundwire.evaluation.score histogram: 6 scores recorded" in run.text


def test_llamaindex_online_scores_inline_on_the_apps_providers(runs: dict[str, Run]) -> None:
    """Inline results sit on each query's span of the app's own provider; metrics on its meter."""
    run = ok(runs, "llamaindex_online")
    assert "instrumented: ['groundwire_llamaindex']" in run.text
    assert (
        "When is the main branch open? -> {'quoted_spans': 1.0, 'quote_verification': 1.0}"
        in run.text
    )
    assert (
        "Can the study rooms be reserved? -> {'quoted_spans': 0.0, 'quote_verification': 0.0}"
        in run.text
    )
    assert "'groundwire.evaluation.score'" in run.text


def test_rescore_trace_file_writes_results_and_exports_under_the_turns(
    runs: dict[str, Run],
) -> None:
    """The recorded file re-scores to .jsonl and .html; evaluation spans hang under the turns."""
    run = ok(runs, "rescore_trace_file")
    assert "36 spans, 4 traces, 4 turns" in run.text
    assert "scored 4 turns" in run.text
    assert "mean quoted_spans: 0.500" in run.text and "mean quote_verification: 0.750" in run.text
    assert "1 turn(s) quote something their sources do not say" in run.text
    assert "exported 4 evaluation spans; 4 hang under original turn spans" in run.text
    out = run.cwd / "groundwire-out" / "rescore-example"
    assert len((out / "scores.jsonl").read_text().splitlines()) == 4
    assert "a fine of one dollar a day" in (out / "report.html").read_text(encoding="utf-8")


def test_custom_evaluator_plugin_works_registered_and_as_an_entry_point(
    runs: dict[str, Run],
) -> None:
    """register_evaluator scores in-process; a fresh process finds the entry point by name."""
    run = ok(runs, "custom_evaluator_plugin")
    assert "citation_markers=0.5, quoted_spans=None" in run.text
    assert "an uncited answer scores 0.0" in run.text
    assert "citation_markers = citation_markers:CitationMarkers" in run.text
    assert re.search(r"available: citation_markers, \w", run.text)
    assert "via entry point: citation_markers=0.667 (2 of 3 markers" in run.text


def test_erag_qa_tells_a_worse_ranking_apart(runs: dict[str, Run]) -> None:
    """Same documents, worse order: P_3 stays, recip_rank and ndcg_cut_3 drop."""
    run = ok(runs, "erag_qa")
    assert re.search(r"P_3\s+0\.333\s+0\.333", run.stdout)
    assert re.search(r"recip_rank\s+1\.000\s+0\.444", run.stdout)
    assert re.search(r"ndcg_cut_3\s+1\.000\s+0\.583", run.stdout)
    assert "labels [0.0, 0.0, 1.0]" in run.text
