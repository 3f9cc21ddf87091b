"""`engine="ray"`: the same results as the local engine, on a local Ray instance (2 CPUs)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundwire.offline import rescore
from groundwire.offline._grouping import ROOT_MISSING
from tests.offline._ray_local import local_ray as _local_ray
from tests.offline._traces import record_turns, write_groundwire_jsonl

ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture
def local_ray() -> Iterator[None]:
    """A local Ray instance in a private temp folder, removed afterwards."""
    with _local_ray(ray):
        yield


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_engine_matches_the_local_engine(local_ray: None, tmp_path: Path) -> None:
    """Two files re-scored on Ray give the local engine's records (order aside) and counters."""
    spans = record_turns(8)
    first = write_groundwire_jsonl(spans[:12], tmp_path / "a.jsonl", batch=3)
    second = write_groundwire_jsonl(spans[12:], tmp_path / "b.jsonl", batch=3)
    spec = {"quoted_spans": {}, "quote_verification": {"embedder": None}}
    local = rescore([first, second], spec, tmp_path / "local.jsonl")
    on_ray = rescore([first, second], spec, tmp_path / "ray.jsonl", engine="ray", workers=1)
    assert on_ray.engine == "ray"
    assert sorted((tmp_path / "ray.jsonl").read_text().splitlines()) == sorted(
        (tmp_path / "local.jsonl").read_text().splitlines()
    )
    assert on_ray.turns_scored == local.turns_scored == 8
    assert (on_ray.read.files, on_ray.read.spans, on_ray.counts.traces) == (2, 24, 8)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_resume_expected_and_incomplete_traces_work_alike_on_ray(
    local_ray: None, tmp_path: Path
) -> None:
    """--resume continues a cut OUT, gold answers join, a cut trace is counted: as locally."""
    spans = record_turns(6)
    whole = write_groundwire_jsonl(spans[:-2], tmp_path / "all.jsonl", batch=2)  # last turn cut
    lines = whole.read_text().splitlines(keepends=True)
    parts = [tmp_path / "b.jsonl", tmp_path / "a.jsonl"]
    parts[0].write_text("".join(lines[4:]))
    parts[1].write_text("".join(lines[:4]))
    gold = tmp_path / "gold.jsonl"
    gold.write_text(
        "".join(
            f'{{"query": "How tall is the Eiffel Tower? ({i})", "expected": ["330 m"]}}\n'
            for i in range(6)
        )
    )
    spec = {"quoted_spans": {}}
    local = rescore(parts, spec, tmp_path / "local.jsonl", expected=gold)
    out = tmp_path / "ray.jsonl"
    rows = (tmp_path / "local.jsonl").read_text().splitlines(keepends=True)
    out.write_text("".join(rows[:2]) + rows[2][:10])  # a run killed mid-line
    on_ray = rescore(parts, spec, out, expected=gold, engine="ray", resume=True)
    assert out.read_text().splitlines(keepends=True) == rows
    assert (on_ray.turns_scored, on_ray.counts.resumed) == (3, 2)
    assert on_ray.counts.incomplete == local.counts.incomplete == {ROOT_MISSING: 1}
    assert (local.expected_matched, on_ray.expected_matched) == (5, 3), "resumed: not joined"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_spans_exported_twice_across_files_give_one_turn_on_both_engines(
    local_ray: None, tmp_path: Path
) -> None:
    """The same spans in two files (a Collector retry): one turn each, the copies counted, the
    same rows on Ray as locally."""
    spans = record_turns(4)
    first = write_groundwire_jsonl(spans, tmp_path / "a.jsonl", batch=3)
    again = write_groundwire_jsonl(spans, tmp_path / "b.jsonl", batch=3)
    local = rescore([first, again], ["quoted_spans"], tmp_path / "local.jsonl")
    on_ray = rescore([first, again], ["quoted_spans"], tmp_path / "ray.jsonl", engine="ray")
    for run in (local, on_ray):
        assert run.turns_scored == 4
        assert run.counts.duplicate_spans == len(spans)
    assert (tmp_path / "ray.jsonl").read_text() == (tmp_path / "local.jsonl").read_text()


def _most_at_once(events: list[dict[str, object]]) -> int:
    """The most of `events` (Ray timeline spans) that ran at the same moment."""
    points = sorted(
        [(float(e["ts"]), 1) for e in events]  # type: ignore[arg-type]
        + [(float(e["ts"]) + float(e["dur"]), -1) for e in events]  # type: ignore[arg-type]
    )
    most = running = 0
    for _, step in points:
        running += step
        most = max(most, running)
    return most


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_workers_caps_the_scoring_tasks_running_at_once(local_ray: None, tmp_path: Path) -> None:
    """`workers=1` on a Ray with 2 CPUs: one scoring task at a time (the driver keeps no task
    submitted beyond `workers`; this small input is one key range, its first task assembling
    it and the rest cut into slices of 4 chunks); the same rows.

    The slices score quote verification on 40 traces (tens of ms each, several times the
    driver's turn-around), and a first two-worker run has started both Ray worker processes, so
    tasks the driver lets run together do overlap: the check on two workers shows it, and a
    driver that let one task too many run fails the one-worker check."""
    traces = write_groundwire_jsonl(record_turns(400), tmp_path / "t.jsonl", batch=3)
    spec = {"quoted_spans": {}, "quote_verification": {"embedder": None}}
    most = {}
    for workers in (2, 1, 2):  # the first run starts the second worker process
        out = tmp_path / f"w{workers}.jsonl"
        started = time.time() * 1e6
        rescore([traces], spec, out, engine="ray", workers=workers, chunk_size=10)
        events = [
            event
            for event in ray.timeline()
            if event.get("ph") == "X"
            and "score_batches" in str(event.get("cat", ""))
            and event["ts"] >= started
        ]
        assert len(events) == 10, "400 traces: the first task, then slices of 4 chunks of 10"
        most[workers] = _most_at_once(events)
    assert most[2] == 2, "two workers: tasks long enough to run together"
    assert most[1] == 1
    assert (tmp_path / "w1.jsonl").read_text() == (tmp_path / "w2.jsonl").read_text()
