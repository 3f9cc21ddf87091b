"""The `rescore` pipeline's Ray branch (`offline/_rescore_run.py`, `Run.score_batches`): every
option of a run reaches Ray's job: the format, strictness, gold answers, the turns `--resume`
skips, the chunk size, the stop flag, the evaluators' options and OUT written by the workers.

One local Ray for the module (`ray.init(num_cpus=1)` in a private temp folder, removed
afterwards) and four recorded turns; each run takes a second or two once Ray is up.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline import StopFlag, rescore
from groundwire.offline.readers import BadRecordError, FormatMismatchError
from tests.offline._ray_local import local_ray
from tests.offline._traces import record_turns, write_groundwire_jsonl

ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

TURNS = 4


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Four recorded turns as OTLP/JSON lines, with a local Ray (one CPU) up for the module."""
    path = tmp_path_factory.mktemp("traces") / "traces.jsonl"
    write_groundwire_jsonl(record_turns(TURNS), path, batch=3)
    with local_ray(ray, num_cpus=1):
        yield path


@pytest.fixture(scope="module")
def twelve(traces: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Twelve recorded turns (on the module's Ray): enough for several of the engine's slices,
    which hold `4 x chunk_size` traces (one range, one worker)."""
    path = tmp_path_factory.mktemp("twelve") / "traces.jsonl"
    write_groundwire_jsonl(record_turns(12), path, batch=3)
    return path


def _rows(results: list[Any]) -> list[tuple[str, str, str, dict[str, Any]]]:
    """Results as sortable rows: the turn's ids, its query and the values."""
    rows = [(r.turn.trace_id, r.turn.span_id, r.turn.query, r.values()) for r in results]
    return sorted(rows, key=lambda row: (row[0], row[1]))


def test_ray_gives_the_local_engines_results(traces: Path) -> None:
    """Without OUT, Ray's results stay in the summary and are the local engine's results."""
    local = rescore(traces, ["quoted_spans"], None)
    on_ray = rescore(traces, ["quoted_spans"], None, engine="ray")
    assert on_ray.turns_scored == local.turns_scored == TURNS
    assert on_ray.results is not None and local.results is not None
    assert _rows(on_ray.results) == _rows(local.results)
    assert on_ray.tallies["quoted_spans"].scored == TURNS


def test_ray_reads_the_format_it_is_told(traces: Path) -> None:
    """`fmt` reaches Ray's readers: OTLP lines read as Jaeger JSON end the run with the local
    engine's FormatMismatchError, naming both formats."""
    with pytest.raises(FormatMismatchError, match=r"is OTLP/JSON \(otlp-json\), not Jaeger"):
        rescore(traces, ["quoted_spans"], None, engine="ray", fmt="jaeger")


def test_ray_stops_on_a_bad_record_when_strict(traces: Path, tmp_path: Path) -> None:
    """`strict` reaches Ray's readers: a broken line ends the run with the local engine's
    `BadRecordError`, naming the line (carried out of the read task, `_ray_reads`)."""
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(traces.read_text(encoding="utf-8") + "{not json\n", encoding="utf-8")
    lenient = rescore(damaged, ["quoted_spans"], None, engine="ray", on_problem=lambda _t: None)
    assert lenient.read.bad_records == 1 and lenient.turns_scored == TURNS
    with pytest.raises(BadRecordError, match=r"damaged\.jsonl:5"):
        rescore(damaged, ["quoted_spans"], None, engine="ray", strict=True)


def test_ray_joins_gold_answers_to_turns(traces: Path, tmp_path: Path) -> None:
    """`expected` reaches Ray's assembly: the turn with that query carries its gold answer."""
    gold = tmp_path / "gold.jsonl"
    query = "How tall is the Eiffel Tower? (1)"
    gold.write_text(json.dumps({"query": query, "expected": ["330 m"]}), encoding="utf-8")
    summary = rescore(traces, ["quoted_spans"], None, engine="ray", expected=gold)
    assert summary.results is not None
    assert {r.turn.query: r.turn.expected for r in summary.results}[query] == ("330 m",)
    assert sum(1 for r in summary.results if r.turn.expected) == 1


def test_ray_resume_skips_the_turns_out_holds(traces: Path, tmp_path: Path) -> None:
    """`--resume` on Ray: the turns already in OUT are skipped, the others scored once."""
    out = tmp_path / "out.jsonl"
    rescore(traces, ["quoted_spans"], out)
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    out.write_text("".join(lines[:2]), encoding="utf-8")
    summary = rescore(traces, ["quoted_spans"], out, engine="ray", resume=True)
    assert (summary.counts.resumed, summary.turns_scored) == (2, TURNS - 2)
    keys = [(r["trace_id"], r["span_id"]) for r in map(json.loads, out.read_text().splitlines())]
    assert len(keys) == len(set(keys)) == TURNS


def test_ray_chunks_follow_chunk_size(twelve: Path) -> None:
    """`chunk_size` reaches Ray: a scoring task takes `4 x chunk_size` traces, so with 1 the
    hook sees the twelve turns in three slices of four (the default puts them in one)."""
    chunks: list[int] = []
    summary = rescore(
        twelve,
        ["quoted_spans"],
        None,
        engine="ray",
        workers=1,
        chunk_size=1,
        on_results=lambda results: chunks.append(len(results)),
    )
    assert summary.turns_scored == 12
    assert chunks == [4, 4, 4]
    whole: list[int] = []
    rescore(
        twelve,
        ["quoted_spans"],
        None,
        engine="ray",
        workers=1,
        on_results=lambda results: whole.append(len(results)),
    )
    assert whole == [12]


def test_ray_stops_after_the_chunk_in_flight(twelve: Path) -> None:
    """The stop flag reaches Ray: asked after the first chunk, the run ends interrupted."""
    stop = StopFlag()
    chunks: list[int] = []

    def stop_after_one(results: list[Any]) -> None:
        chunks.append(len(results))
        stop.set()

    summary = rescore(
        twelve,
        ["quoted_spans"],
        None,
        engine="ray",
        workers=1,
        chunk_size=1,
        stop=stop,
        on_results=stop_after_one,
    )
    assert summary.interrupted is True
    assert len(chunks) == 1 and summary.turns_scored == chunks[0] < 12


def test_ray_workers_get_the_evaluators_options(traces: Path) -> None:
    """On Ray the evaluators travel as their spec (names and options), not as built objects:
    an option given by name changes the scores the workers compute."""
    spec = {"quoted_spans": {"min_len": 50}}
    summary = rescore(traces, spec, None, engine="ray")
    local = rescore(traces, spec, None)
    assert summary.results is not None and local.results is not None
    assert _rows(summary.results) == _rows(local.results)


def test_ray_workers_write_parquet_and_lines_out(traces: Path, tmp_path: Path) -> None:
    """OUT written by the workers (Parquet parts, encoded JSON lines) holds every turn once."""
    import pyarrow.parquet as pq

    table = tmp_path / "out.parquet"
    summary = rescore(traces, ["quoted_spans"], table, engine="ray")
    assert summary.turns_scored == TURNS and pq.read_table(table).num_rows == TURNS
    lines = tmp_path / "out.jsonl"
    rescore(traces, ["quoted_spans"], lines, engine="ray")
    assert len(lines.read_text(encoding="utf-8").splitlines()) == TURNS
