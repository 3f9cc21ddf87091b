"""End to end: traces scored here by two judges on a real OpenAI-protocol server, each scripted
to agree with the human labels at a known rate; kappa lands in its interval, the judges rank."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score
from typer.testing import CliRunner

from groundwire import semconv
from groundwire.calibrate import read_turns
from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.judges import GROUNDEDNESS_PROMPT_HASH
from groundwire.testing import OpenAIServer, Reply, structured
from tests.calibrate._files import write_labels_csv
from tests.offline._cli_files import write_turns

TURNS = 60
AGREEMENT = {"strong": 0.9, "weak": 0.6}
"""How often each judge model's rating agrees with the human pass/fail label."""
_TURN = re.compile(r"\(turn (\d+)\)")


def _plan() -> tuple[list[int], dict[str, list[int]]]:
    """Balanced human labels (1 pass, 0 fail) and each judge's pass/fail, agreeing at its rate."""
    rng = random.Random(28)
    human = [1] * (TURNS // 2) + [0] * (TURNS // 2)
    rng.shuffle(human)
    judged = {
        model: [h if rng.random() < rate else 1 - h for h in human]
        for model, rate in AGREEMENT.items()
    }
    return human, judged


HUMAN, JUDGED = _plan()


def _reply(request: Any) -> Reply:
    """Rate the turn the request is about: 2 when the model's plan says pass, else 0."""
    text = json.dumps(request)
    turn = int(_TURN.search(text).group(1))  # type: ignore[union-attr]
    return structured({"rating": 2 * JUDGED[request["model"]][turn]})(request)


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    """The scripted judge server, shared by the module's tests."""
    with OpenAIServer(default=_reply) as running:
        yield running


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A trace file of TURNS turns and the human labels of each (by span id)."""
    folder = tmp_path_factory.mktemp("calibrate")
    traces = write_turns([f"question {i}" for i in range(TURNS)], folder / "traces.jsonl")
    turns = read_turns([traces]).turns
    rows = []
    for turn in turns:
        index = int(_TURN.search(turn.answer or "").group(1))  # type: ignore[union-attr]
        label = "pass" if HUMAN[index] else "fail"
        rows.append({"span_id": turn.span_id, "evaluator": "groundedness", "label": label})
    labels = write_labels_csv(folder / "labels.csv", rows, ("span_id", "evaluator", "label"))
    return traces, labels


def test_two_judges_ranked_with_kappa_in_interval(
    server: OpenAIServer, files: tuple[Path, Path], tmp_path: Path
) -> None:
    """Each judge's kappa is scikit-learn's on what it said, its interval holds the scripted
    rate's kappa (2p - 1 for balanced labels), the stronger judge ranks first, tokens counted."""
    traces, labels = files
    out = tmp_path / "report.json"
    args = ["calibrate", "--labels", str(labels), "--traces", str(traces), "-e", "groundedness"]
    for model in AGREEMENT:
        args += ["--judge", f"model={model},base_url={server.base_url}"]
    env = {"GROUNDWIRE_JUDGE_API_KEY": "test", "GROUNDWIRE_JUDGE_CACHE": "off"}
    result = CliRunner(env=env).invoke(app, [*args, "--out", str(out), "--resamples", "1000"])
    assert result.exit_code == ExitCode.OK, result.output + result.stderr
    rows = {
        row["judge"]: row
        for row in json.loads(out.read_text())["agreements"]
        if row["prompt"] == "mean"
    }
    assert list(rows) == ["strong", "weak"]
    for model, rate in AGREEMENT.items():
        kappa = rows[model]["kappa"]
        assert kappa["value"] == pytest.approx(cohen_kappa_score(HUMAN, JUDGED[model]))
        assert kappa["low"] <= 2 * rate - 1 <= kappa["high"], (model, kappa)
        assert rows[model]["n"] == TURNS
        assert rows[model]["tokens"] == TURNS * 2 * 15  # two prompts, 10 + 5 tokens a call
        assert rows[model]["made_by"] == {
            semconv.GROUNDWIRE_JUDGE_MODEL: [model],
            semconv.GROUNDWIRE_JUDGE_PROMPT_VERSION: [GROUNDEDNESS_PROMPT_HASH],
        }
    assert rows["strong"]["kappa"]["value"] > rows["weak"]["kappa"]["high"]
    made_by = f"model strong; prompts {GROUNDEDNESS_PROMPT_HASH}"
    assert f"groundedness / mean @ strong scored by judge {made_by}" in result.stdout


def test_dead_judge_exits_all_evaluations_failed(files: tuple[Path, Path]) -> None:
    """A judge that refuses every call: nothing to compare, exit 6 with the reason."""
    traces, labels = files
    with OpenAIServer(default=lambda request: Reply.error(400, "refused")) as dead:
        env = {"GROUNDWIRE_JUDGE_API_KEY": "test", "GROUNDWIRE_JUDGE_MAX_RETRIES": "0"}
        args = ["--labels", str(labels), "--traces", str(traces), "-e", "groundedness"]
        args += ["--judge", f"model=m,base_url={dead.base_url}"]
        result = CliRunner(env=env).invoke(app, ["calibrate", *args])
    assert result.exit_code == ExitCode.ALL_EVALUATIONS_FAILED, result.output
    assert "nothing to calibrate: every evaluation failed or was skipped" in result.stderr
