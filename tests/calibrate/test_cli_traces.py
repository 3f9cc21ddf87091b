"""`groundwire calibrate --traces` (`cli/_calibrate.py`): traces scored here once per `--judge`,
each judge's evaluators built with the `--options` given, and the exit code of what was read and
scored. A few turns, a real OpenAI-protocol judge server on loopback scripted per model, few
bootstrap resamples: each test takes about a second.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groundwire.calibrate import read_turns
from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.testing import OpenAIServer, Reply, structured
from tests.calibrate._files import write_labels_csv
from tests.offline._cli_files import write_turns

TURNS = 4
RATING = {"a": 2, "b": 0}
"""What each judge model rates every turn (2 fully grounded, 0 not)."""
ENV = {"GROUNDWIRE_JUDGE_API_KEY": "test", "GROUNDWIRE_JUDGE_CACHE": "off"}


def _reply(request: Any) -> Reply:
    """The scripted rating of the model asked; model `dead` refuses."""
    if request["model"] == "dead":
        return Reply.error(400, "refused")
    return structured({"rating": RATING[request["model"]]})(request)


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    """The scripted judge server, shared by the module's tests."""
    with OpenAIServer(default=_reply) as running:
        yield running


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A trace file of TURNS turns, and a human `pass` label of each (by span id)."""
    folder = tmp_path_factory.mktemp("calibrate")
    traces = write_turns([f"question {i}" for i in range(TURNS)], folder / "traces.jsonl")
    rows = [
        {"span_id": turn.span_id, "evaluator": "groundedness", "label": "pass"}
        for turn in read_turns([traces]).turns
    ]
    labels = write_labels_csv(folder / "labels.csv", rows, ("span_id", "evaluator", "label"))
    return traces, labels


def _calibrate(*args: str | Path, env: dict[str, str] = ENV) -> Any:
    """Run `groundwire calibrate ARGS` in-process."""
    return CliRunner(env=env).invoke(app, ["calibrate", "--resamples", "20", *map(str, args)])


def test_each_judge_scores_the_traces_with_the_options_given(
    server: OpenAIServer, files: tuple[Path, Path], tmp_path: Path
) -> None:
    """Two `--judge`s: a row per judge (named as given, else by its model), made by that
    model; the `--options` of an evaluator reach its judge (JSON mode: no tools offered), and
    an evaluator without a judge is scored once, untouched."""
    traces, labels = files
    out = tmp_path / "report.json"
    server.clear()
    url = server.base_url
    result = _calibrate(
        "--labels", labels, "--traces", traces, "-e", "groundedness,quoted_spans",
        "--options", json.dumps({"groundedness": {"mode": "json"}}),
        "--judge", f"model=a,base_url={url},name=first", "--judge", f"model=b,base_url={url}",
        "--out", out,
    )  # fmt: skip
    assert result.exit_code == ExitCode.OK, result.output + result.stderr
    rows = {
        row["judge"]: row
        for row in json.loads(out.read_text())["agreements"]
        if row["prompt"] == "mean"
    }
    assert list(rows) == ["first", "b"]
    assert rows["first"]["made_by"]["groundwire.judge.model"] == ["a"]
    assert rows["b"]["made_by"]["groundwire.judge.model"] == ["b"]
    assert rows["first"]["accuracy"]["value"] == 1.0 and rows["b"]["accuracy"]["value"] == 0.0
    requests = [r.json for r in server.requests]
    assert len(requests) == 2 * 2 * TURNS  # two judges, two prompts a turn
    assert all("tools" not in request for request in requests)


def test_a_bad_record_is_told_and_ends_partial(
    server: OpenAIServer, files: tuple[Path, Path], tmp_path: Path
) -> None:
    """A broken line in --traces: said on stderr as the command's notice, the rest scored,
    exit 3 (partial input) after the report."""
    traces, labels = files
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(traces.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    result = _calibrate(
        "--labels", labels, "--traces", damaged, "-e", "groundedness",
        "--judge", f"model=a,base_url={server.base_url}",
    )  # fmt: skip
    assert result.exit_code == ExitCode.PARTIAL_INPUT, result.output + result.stderr
    assert result.stderr.startswith(f"groundwire: {damaged}:")
    assert "judge vs human" in result.stdout


def test_a_judge_that_refuses_every_call_leaves_nothing_to_calibrate(
    server: OpenAIServer, files: tuple[Path, Path]
) -> None:
    """Every evaluation failed (one judge, refusing): exit 6 with the reason, no report."""
    traces, labels = files
    env = {**ENV, "GROUNDWIRE_JUDGE_MAX_RETRIES": "0"}
    result = _calibrate(
        "--labels", labels, "--traces", traces, "-e", "groundedness",
        "--judge", f"model=dead,base_url={server.base_url}", env=env,
    )  # fmt: skip
    assert result.exit_code == ExitCode.ALL_EVALUATIONS_FAILED, result.output
    assert result.stderr == (
        "groundwire: nothing to calibrate: every evaluation failed or was skipped (is the "
        "judge configured and reachable?) (exit 6)\n"
    )


def test_unreadable_or_missing_traces(files: tuple[Path, Path], tmp_path: Path) -> None:
    """--traces with no readable span: exit 4 naming why; a --traces file that is not there:
    exit 2 naming it, before anything is read."""
    _, labels = files
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text("{not json\n{nor this\n", encoding="utf-8")
    result = _calibrate("--labels", labels, "--traces", garbage, "-e", "quoted_spans")
    assert result.exit_code == ExitCode.NOTHING_READABLE, result.output
    assert result.stderr.endswith(
        "groundwire: nothing to calibrate: no span could be read from --traces (exit 4)\n"
    )
    missing = tmp_path / "missing.jsonl"
    result = _calibrate("--labels", labels, "--traces", missing, "-e", "quoted_spans")
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert result.stderr == f"error: --traces: {missing} does not exist\n"


@pytest.mark.parametrize(
    ("judges", "names", "error"),
    [
        (["model"], "groundedness", "--judge: 'model' is not KEY=VALUE with KEY one of name, "
         "model, base_url, api_key_env, timeout_s, mode, cache (e.g. --judge "
         "model=gpt-4o-mini,base_url=http://127.0.0.1:8000/v1)"),
        (["model=a", "model=a"], "groundedness",
         "--judge: two judges share a name; give each one name=..."),
        (["model=a"], "quoted_spans,quote_verification",
         "--judge: none of quoted_spans, quote_verification uses an LLM judge"),
    ],
)  # fmt: skip
def test_a_bad_judge_is_refused_in_full(
    files: tuple[Path, Path], judges: list[str], names: str, error: str
) -> None:
    """A `--judge` without `=` (even a known key), two judges of one name, or judges for
    evaluators that have none: the whole message, one line, exit 2."""
    traces, labels = files
    args: list[str | Path] = ["--labels", labels, "--traces", traces, "-e", names]
    for judge in judges:
        args += ["--judge", judge]
    result = _calibrate(*args)
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert result.stderr == f"error: {error}\n"


def test_judges_and_disagreements_are_shown_for_the_mean_of_the_prompts(
    server: OpenAIServer, files: tuple[Path, Path]
) -> None:
    """With two prompts a judge has a row per prompt and one for their mean: which judge made
    the scores, and the worst disagreements, are shown once, for the mean row."""
    traces, labels = files
    result = _calibrate(
        "--labels", labels, "--traces", traces, "-e", "groundedness", "--disagreements", "1",
        "--judge", f"model=a,base_url={server.base_url}",
        "--judge", f"model=b,base_url={server.base_url}",
    )  # fmt: skip
    assert result.exit_code == ExitCode.OK, result.output + result.stderr
    out = " ".join(result.stdout.split())
    assert out.count("scored by judge") == 2
    assert "groundedness / mean @ a scored by judge model a" in out
    assert "groundedness / mean @ b scored by judge model b" in out
    assert out.count(" human 1, judge ") == 1
    assert "groundedness / mean @ b human 1, judge fail (0.00)" in out
