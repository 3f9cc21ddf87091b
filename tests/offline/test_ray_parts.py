"""An OUT on Ray written by the Ray workers themselves: a Parquet OUT part by part (the local
engine's rows, no partial part where a whole one is expected, `--resume` over the parts); a
`.jsonl` or `.csv` OUT encoded by the workers and copied by the driver (the local engine's file
byte for byte, a failed run's lines kept aside, `--resume` over them)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline import RescoreSummary, rescore
from tests.offline._ray_local import local_ray
from tests.offline._traces import record_turns, write_groundwire_jsonl

ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
pq = pytest.importorskip("pyarrow.parquet")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

SPEC: dict[str, dict[str, Any]] = {"quoted_spans": {}, "quote_verification": {"embedder": None}}


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """One local Ray instance for the module (2 CPUs)."""
    with local_ray(ray):
        yield


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Twelve turns in two files (a trace's spans in both)."""
    folder = tmp_path_factory.mktemp("traces")
    spans = record_turns(12)
    return [
        write_groundwire_jsonl(spans[:20], folder / "a.jsonl", batch=3),
        write_groundwire_jsonl(spans[20:], folder / "b.jsonl", batch=3),
    ]


def _rows(path: Path) -> list[dict[str, Any]]:
    """OUT's rows, a file or a directory of parts, sorted by turn."""
    rows: list[dict[str, Any]] = pq.read_table(path).to_pylist()
    return sorted(rows, key=lambda row: (row["trace_id"], row["span_id"]))


def _failing_once_scored(summary: RescoreSummary) -> None:
    """A progress hook that fails the run once some rows were written."""
    if summary.turns_scored:
        raise RuntimeError("the run broke")


def _fail_once(traces: list[Path], out: Path) -> Path:
    """Run on Ray over an existing OUT until the progress hook breaks it: OUT is left as it
    was and the notice names where the rows written are kept (returned)."""
    out.write_bytes(b"earlier")
    notices: list[str] = []
    with pytest.raises(RuntimeError, match="the run broke"):
        rescore(
            traces, SPEC, out, engine="ray", workers=1, chunk_size=2,
            progress=_failing_once_scored, on_problem=notices.append,
        )  # fmt: skip
    partial = out.with_name(f"o.partial{out.suffix}")
    assert out.read_bytes() == b"earlier"
    assert notices[-1].startswith("the run failed: the ")
    assert notices[-1].endswith(f"results written are kept in {partial}; {out} is left as it was")
    return partial


@pytest.mark.usefixtures("cluster")
def test_the_workers_write_the_local_engines_rows_as_parts(
    traces: list[Path], tmp_path: Path
) -> None:
    """OUT is a directory of whole parts (`part-00000.parquet`, ...) holding the local engine's
    rows; the counts and tallies reach the driver; no partial directory is left."""
    local = rescore(traces, SPEC, tmp_path / "local.parquet")
    out = tmp_path / "ray.parquet"
    on_ray = rescore(traces, SPEC, out, engine="ray", workers=2, chunk_size=2)
    names = sorted(part.name for part in out.iterdir())
    assert len(names) > 1 and names == [f"part-{i:05d}.parquet" for i in range(len(names))]
    assert _rows(out) == _rows(tmp_path / "local.parquet")
    assert on_ray.turns_scored == local.turns_scored == 12
    assert on_ray.tallies == local.tallies
    assert (on_ray.read.spans, on_ray.counts.traces) == (local.read.spans, local.counts.traces)
    assert not (tmp_path / "ray.partial.parquet").exists()
    again = rescore(traces, SPEC, out, engine="ray", workers=1)  # a parts OUT is replaced
    assert again.turns_scored == 12 and _rows(out) == _rows(tmp_path / "local.parquet")


@pytest.mark.usefixtures("cluster")
def test_a_failed_run_keeps_its_parts_aside_and_resume_finishes_them(
    traces: list[Path], tmp_path: Path
) -> None:
    """A run that breaks: OUT left as it was, the whole parts in the partial directory (named
    in the notice, no torn file); `resume` reads them and scores only the rest."""
    out = tmp_path / "o.parquet"
    partial = _fail_once(traces, out)
    assert not list(partial.glob("*.tmp"))
    kept = pq.read_table(partial).num_rows
    assert kept >= 2
    out.unlink()
    resumed = rescore(traces, SPEC, out, engine="ray", workers=1, resume=True)
    assert resumed.counts.resumed >= kept  # tasks in flight may have added a part since
    assert resumed.counts.resumed + resumed.turns_scored == 12
    rows = _rows(out)
    assert len(rows) == len({(row["trace_id"], row["span_id"]) for row in rows}) == 12
    assert not partial.exists()
    unchanged = rescore(traces, SPEC, out, engine="ray", workers=1, resume=True)
    assert (unchanged.counts.resumed, unchanged.turns_scored) == (12, 0)
    assert len(_rows(out)) == 12


@pytest.mark.usefixtures("cluster")
def test_the_local_engine_resumes_and_replaces_a_parts_output(
    traces: list[Path], tmp_path: Path
) -> None:
    """A parts OUT left by Ray is an output like any other locally: `resume` finds every turn
    done and merges the parts into one file; a fresh local run replaces it."""
    out = tmp_path / "o.parquet"
    rescore(traces, SPEC, out, engine="ray", workers=1, chunk_size=2)
    assert out.is_dir()
    expected = _rows(out)
    resumed = rescore(traces, SPEC, out, resume=True)
    assert (resumed.counts.resumed, resumed.turns_scored) == (12, 0)
    assert out.is_file() and _rows(out) == expected
    rescore(traces, SPEC, out, engine="ray", workers=1, chunk_size=2)
    fresh = rescore(traces, SPEC, out)
    assert fresh.turns_scored == 12 and out.is_file() and _rows(out) == expected


@pytest.mark.usefixtures("cluster")
@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_the_workers_encoded_rows_are_the_local_engines_file(
    traces: list[Path], tmp_path: Path, suffix: str
) -> None:
    """Several blocks encoded by two workers and copied by the driver give the local engine's
    file byte for byte (order, header, line ends); counts and tallies reach the driver."""
    local = rescore(traces, SPEC, tmp_path / f"local{suffix}")
    out = tmp_path / f"ray{suffix}"
    on_ray = rescore(traces, SPEC, out, engine="ray", workers=2, chunk_size=2)
    assert out.read_bytes() == (tmp_path / f"local{suffix}").read_bytes()
    assert on_ray.turns_scored == local.turns_scored == 12
    assert on_ray.tallies == local.tallies
    assert (on_ray.read.spans, on_ray.counts.traces) == (local.read.spans, local.counts.traces)
    assert not (tmp_path / f"ray.partial{suffix}").exists()


@pytest.mark.usefixtures("cluster")
def test_a_failed_run_keeps_its_lines_aside_and_resume_finishes_them(
    traces: list[Path], tmp_path: Path
) -> None:
    """A run that breaks: OUT left as it was, the whole lines written so far in the partial
    file (named in the notice, no torn line); `resume` adopts it and scores only the rest."""
    local = tmp_path / "local.jsonl"
    rescore(traces, SPEC, local)
    out = tmp_path / "o.jsonl"
    partial = _fail_once(traces, out)
    kept = partial.read_text(encoding="utf-8")
    assert kept.endswith("\n") and 2 <= kept.count("\n") < 12
    out.unlink()
    resumed = rescore(traces, SPEC, out, engine="ray", workers=1, resume=True)
    assert resumed.counts.resumed == kept.count("\n")
    assert resumed.counts.resumed + resumed.turns_scored == 12
    assert sorted(out.read_text().splitlines()) == sorted(local.read_text().splitlines())
    assert not partial.exists()
    unchanged = rescore(traces, SPEC, out, engine="ray", workers=1, resume=True)
    assert (unchanged.counts.resumed, unchanged.turns_scored) == (12, 0)
    assert len(out.read_text().splitlines()) == 12
