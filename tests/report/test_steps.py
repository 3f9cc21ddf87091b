"""Agent and graph turns in the report: the steps in order, what each gave, and which model
call gave the answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from tests.offline._traces import record_turns, write_groundwire_jsonl

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def _report(tmp_path: Path, traces: Path, *evaluators: str) -> str:
    """`groundwire rescore TRACES -e EVALUATORS -o report.html`, the report's text."""
    out = tmp_path / "report.html"
    args = ["rescore", str(traces), "-e", ",".join(evaluators), "-o", str(out), "-q"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    return out.read_text(encoding="utf-8")


def _steps(html: str) -> list[list[str]]:
    """Each turn's steps as their text (tags dropped)."""
    lists = re.findall(r'<ol class="steps">(.*?)</ol>', html)
    return [
        [re.sub(r"<[^>]+>", "", item) for item in re.findall(r"<li[^>]*>(.*?)</li>", found)]
        for found in lists
    ]


@pytest.mark.parametrize(
    "name", ["openinference_langgraph_agent.jsonl", "openllmetry_langgraph_agent.jsonl"]
)
def test_an_agent_turn_lists_its_steps_and_what_each_gave(tmp_path: Path, name: str) -> None:
    """A LangGraph agent's turn: model call, tool call, retrieval (contexts 0-1), model call
    that gave the answer, in that order; no placeholder left."""
    html = _report(tmp_path, TRACES / name, "quote_verification")
    assert "groundwire:steps" not in html
    steps = _steps(html)
    assert steps, html[:2000]
    for turn in steps:
        kinds = [step.split(" ", 2)[0] + " " + step.split(" ", 2)[1] for step in turn]
        assert kinds[0] == "model call" and kinds[-1] == "model call"
        assert "tool call" in kinds
        assert sum("→ gave contexts 0–1" in step for step in turn) == 1
        assert turn[-1].endswith("→ gave the answer")
        assert sum("the answer" in step for step in turn) == 1


def test_a_plain_chain_gets_no_steps(tmp_path: Path) -> None:
    """One retrieval and one model call: nothing to explain, no list, no placeholder left."""
    traces = write_groundwire_jsonl(record_turns(3), tmp_path / "traces.jsonl", batch=1)
    html = _report(tmp_path, traces, "quoted_spans")
    assert _steps(html) == []
    assert "groundwire:steps" not in html
