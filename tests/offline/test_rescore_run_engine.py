"""What the rescore pipeline hands each engine (`Run.engine_call` in `offline/_rescore_run.py`).

The Ray engine's call is checked here without starting Ray (tests/offline/test_rescore_run_ray.py
runs it on a real local Ray; Ray cannot start in the processes mutation testing forks): the
call names `score_with_ray` and carries the run's own files, evaluators, summary, options,
resume keys, stop flag and worker-written output. The local engine's call is checked the same
way, and by what a run does. Small real trace files and the real evaluators; fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline import rescore
from groundwire.offline._local_engine import score_local
from groundwire.offline._rescore_inputs import RescoreOptions, check_inputs
from groundwire.offline._rescore_run import Run, start
from groundwire.offline.ray_engine import score_with_ray
from tests.offline._traces import record_turns, write_groundwire_jsonl

TURNS = 4


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four recorded turns as OTLP/JSON lines."""
    path = tmp_path_factory.mktemp("traces") / "traces.jsonl"
    return write_groundwire_jsonl(record_turns(TURNS), path, batch=3)


def _run(**given: Any) -> Run:
    """A run after its set-up (`start`), nothing scored yet."""
    options = RescoreOptions(**given)
    return start(options, check_inputs(options), None)


def test_ray_is_handed_the_runs_files_evaluators_and_every_option(
    traces: Path, tmp_path: Path
) -> None:
    """On Ray: `score_with_ray` with the run's files, the evaluators as given (names, rebuilt
    on the workers), the run's summary, and each option as set: format, strict, gold answers,
    resume keys, concurrency, chunk size, workers, address and the stop flag."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query": "q", "expected": ["x"]}) + "\n", encoding="utf-8")
    run = _run(
        paths=traces, evaluators=["quoted_spans"], engine="ray", fmt="otlp-json", strict=True,
        expected=gold, concurrency=3, chunk_size=5, workers=2, ray_address="127.0.0.1:6390",
    )  # fmt: skip
    call: Any = run.engine_call()
    assert call.func is score_with_ray
    assert call.args == (run.inputs.paths, ["quoted_spans"], run.summary)
    assert call.args[2] is run.summary and run.inputs.gold is not None
    assert call.keywords == {
        "fmt": "otlp-json",
        "strict": True,
        "expected": run.inputs.gold,
        "skip": set(),
        "concurrency": 3,
        "chunk_size": 5,
        "workers": 2,
        "address": "127.0.0.1:6390",
        "stop": run.stop,
        "parts": None,
        "problems": run.problems,
    }
    assert call.keywords["stop"] is run.stop and call.keywords["skip"] is run.skip
    assert call.keywords["problems"] is run.problems


def test_ray_defaults_are_the_options_defaults(traces: Path) -> None:
    """On Ray with nothing set: one worker still gets the evaluators' names (Ray rebuilds them),
    no format, not strict, no gold answers, no address, the default sizes."""
    run = _run(paths=traces, evaluators=["quoted_spans"], engine="ray")
    call: Any = run.engine_call()
    assert call.func is score_with_ray and call.args[1] == ["quoted_spans"]
    assert {k: call.keywords[k] for k in ("fmt", "strict", "expected", "address", "parts")} == {
        "fmt": None,
        "strict": False,
        "expected": None,
        "address": None,
        "parts": None,
    }
    assert (call.keywords["concurrency"], call.keywords["chunk_size"]) == (8, 32)
    assert call.keywords["workers"] == 1


def test_ray_gets_the_resume_keys_of_out(traces: Path, tmp_path: Path) -> None:
    """Resuming on Ray: the keys of the turns OUT already holds are what Ray skips."""
    out = tmp_path / "out.jsonl"
    rescore(traces, ["quoted_spans"], out)
    run = _run(paths=traces, evaluators=["quoted_spans"], engine="ray", out=out, resume=True)
    skip = run.engine_call().keywords["skip"]  # type: ignore[attr-defined]
    assert len(skip) == TURNS and skip is run.skip


def test_ray_writes_out_through_the_workers_only_when_they_write_it(
    traces: Path, tmp_path: Path
) -> None:
    """A .parquet OUT on Ray is handed to the workers (`parts` is the run's writer); an OUT
    the driver writes (an HTML report) is not."""
    parquet = _run(
        paths=traces, evaluators=["quoted_spans"], engine="ray", out=tmp_path / "o.parquet"
    )
    parquet.open_output()
    assert parquet.writer is not None
    assert parquet.engine_call().keywords["parts"] is parquet.writer  # type: ignore[attr-defined]
    html = _run(paths=traces, evaluators=["quoted_spans"], engine="ray", out=tmp_path / "o.html")
    html.open_output()
    assert html.writer is not None
    assert html.engine_call().keywords["parts"] is None  # type: ignore[attr-defined]
    html.writer.close(interrupted=False)


def test_one_local_worker_scores_with_the_evaluators_already_built(traces: Path) -> None:
    """Locally with one worker: `score_local` gets the evaluators the input check built (not
    their names, which would build them again), the worker count, concurrency and stop flag."""
    run = _run(paths=traces, evaluators=["quoted_spans"], concurrency=3)
    call: Any = run.engine_call()
    assert call.func is score_local
    assert call.args[1] is run.inputs.resolved
    assert call.args[2:] == (1, 3, run.stop) and call.args[4] is run.stop


def test_local_workers_get_the_evaluators_names(traces: Path) -> None:
    """Locally with two workers: each worker process builds the evaluators from their names."""
    run = _run(paths=traces, evaluators=["quoted_spans"], workers=2)
    call: Any = run.engine_call()
    assert call.func is score_local
    assert call.args[1] == ["quoted_spans"] and call.args[2:4] == (2, 8)


def test_one_local_worker_builds_each_evaluator_once(
    traces: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole local run with one worker builds its evaluator once (at the input check), and
    that evaluator scores every turn."""
    from groundwire import RagTurn, Score, _registry, register_evaluator

    built: list[object] = []
    scored: list[object] = []

    class Counted:
        name = "counted"

        def __init__(self, **options: Any) -> None:
            built.append(self)

        def evaluate(self, turn: RagTurn) -> Score:
            scored.append(self)
            return Score(name=self.name, value=1.0)

    monkeypatch.setattr(_registry, "_registered", dict(_registry._registered))  # put back after
    register_evaluator("counted", Counted)
    summary = rescore(traces, ["counted"], None)
    assert summary.turns_scored == TURNS
    assert len(built) == 1 and scored == built * TURNS


def test_resuming_on_ray_keeps_the_lines_out_holds(traces: Path, tmp_path: Path) -> None:
    """Resuming on Ray into a .jsonl OUT: the workers' encoded lines go after the lines OUT
    already holds (it is opened for appending, not emptied)."""
    out = tmp_path / "out.jsonl"
    rescore(traces, ["quoted_spans"], out)
    before = out.read_bytes()
    run = _run(paths=traces, evaluators=["quoted_spans"], engine="ray", out=out, resume=True)
    run.open_output()
    assert run.writer is not None and run.target is not None
    run.writer.close(interrupted=False)
    assert run.target.write_path.read_bytes() == before
