"""Outputs in object storage: an object appears only when complete; a failed run says where
its rows are; `--resume` continues an output held in storage. Against moto's S3 server."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline import RescoreSummary, rescore
from tests.offline._s3_server import S3Server, reader_server  # noqa: F401 (the fixture)
from tests.offline._traces import record_turns, write_groundwire_jsonl

pytest.importorskip("s3fs", reason="the s3 extra (fsspec, s3fs) is not installed")
pytest.importorskip("moto.server", reason="moto[server] is not installed")

SPEC: dict[str, dict[str, Any]] = {"quoted_spans": {}}


@pytest.fixture(scope="module")
def traces(server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six turns in one local file, also stored as s3://traces/out-tests/t.jsonl."""
    path = write_groundwire_jsonl(record_turns(6), tmp_path_factory.mktemp("t") / "t.jsonl")
    server.admin.upload_file(str(path), "traces", "out-tests/t.jsonl")
    return path


def _object(server: S3Server, key: str) -> bytes | None:
    """The object's bytes in the results bucket, or None when there is none."""
    try:
        return bytes(server.admin.get_object(Bucket="results", Key=key)["Body"].read())
    except server.admin.exceptions.NoSuchKey:
        return None


def _keys(server: S3Server, prefix: str) -> list[str]:
    """The keys under `prefix` in the results bucket."""
    listed = server.admin.list_objects_v2(Bucket="results", Prefix=prefix)
    return sorted(item["Key"] for item in listed.get("Contents", []))


def _failing_after(chunks: int) -> Any:
    """A progress hook that fails the run after `chunks` chunks were written."""
    seen = [0]

    def hook(summary: RescoreSummary) -> None:
        seen[0] += 1
        if seen[0] > chunks:
            raise RuntimeError("the run broke")

    return hook


def test_every_format_is_uploaded_whole_with_the_local_rows(
    server: S3Server, traces: Path, tmp_path: Path
) -> None:
    """.jsonl, .csv and .parquet in storage hold what the same run writes locally; nothing
    else is left under the prefix (no partial object, no lock)."""
    pyarrow_parquet = pytest.importorskip("pyarrow.parquet")
    for suffix in (".jsonl", ".csv", ".parquet"):
        rescore([traces], SPEC, tmp_path / f"local{suffix}")
        summary = rescore(["s3://traces/out-tests/"], SPEC, f"s3://results/all/s{suffix}")
        assert str(summary.out) == f"s3://results/all/s{suffix}"
        stored = _object(server, f"all/s{suffix}")
        assert stored is not None
        if suffix == ".parquet":
            table = pyarrow_parquet.read_table(io.BytesIO(stored))
            local = pyarrow_parquet.read_table(tmp_path / "local.parquet")
            assert table.to_pylist() == local.to_pylist()
        else:
            assert stored == (tmp_path / f"local{suffix}").read_bytes()
    assert _keys(server, "all/") == ["all/s.csv", "all/s.jsonl", "all/s.parquet"]


def test_a_failed_run_leaves_no_output_object_and_names_where_its_rows_are(
    server: S3Server, traces: Path
) -> None:
    """A run that breaks after 2 rows: no OUT object, the rows under OUT's partial name, and
    the notice names that object; an OUT that was there is left as it was."""
    notices: list[str] = []
    with pytest.raises(RuntimeError, match="the run broke"):
        rescore(
            ["s3://traces/out-tests/t.jsonl"], SPEC, "s3://results/fail/s.jsonl",
            chunk_size=2, progress=_failing_after(1), on_problem=notices.append,
        )  # fmt: skip
    assert _object(server, "fail/s.jsonl") is None
    kept = _object(server, "fail/s.partial.jsonl")
    assert kept is not None and len(kept.splitlines()) == 4
    assert notices == [
        "the run failed: the 4 results written are kept in s3://results/fail/s.partial.jsonl"
    ]
    server.admin.put_object(Bucket="results", Key="fail/s.jsonl", Body=b"earlier\n")
    notices.clear()
    with pytest.raises(RuntimeError):
        rescore(
            ["s3://traces/out-tests/t.jsonl"], SPEC, "s3://results/fail/s.jsonl",
            chunk_size=2, progress=_failing_after(0), on_problem=notices.append,
        )  # fmt: skip
    assert _object(server, "fail/s.jsonl") == b"earlier\n"
    assert notices[-1].endswith("; s3://results/fail/s.jsonl is left as it was")


def test_a_failed_parquet_run_uploads_its_parts_and_resume_finishes_it(server: S3Server) -> None:
    """Parquet: the failed run's complete row-group files go under OUT's partial prefix,
    readable as a dataset, and no OUT object; `resume` takes them, scores the rest, uploads OUT
    whole and removes the partial prefix."""
    pyarrow_parquet = pytest.importorskip("pyarrow.parquet")
    notices: list[str] = []
    with pytest.raises(RuntimeError):
        rescore(
            ["s3://traces/out-tests/t.jsonl"], SPEC, "s3://results/pq/s.parquet",
            chunk_size=2, progress=_failing_after(1), on_problem=notices.append,
        )  # fmt: skip
    assert _object(server, "pq/s.parquet") is None
    parts = _keys(server, "pq/s.partial.parquet/")
    assert parts and all(key.endswith(".parquet") and "/part-" in key for key in parts)
    rows = sum(
        pyarrow_parquet.read_table(io.BytesIO(_object(server, key) or b"")).num_rows
        for key in parts
    )
    assert rows == 4
    assert notices == [
        "the run failed: the 4 results written are kept in s3://results/pq/s.partial.parquet"
    ]
    resumed = rescore(
        ["s3://traces/out-tests/t.jsonl"], SPEC, "s3://results/pq/s.parquet", resume=True
    )
    assert (resumed.counts.resumed, resumed.turns_scored) == (4, 2)
    whole = pyarrow_parquet.read_table(io.BytesIO(_object(server, "pq/s.parquet") or b""))
    assert whole.num_rows == 6 and len(set(whole.column("trace_id").to_pylist())) == 6
    assert _keys(server, "pq/") == ["pq/s.parquet"]


def test_resume_continues_an_output_held_in_storage(
    server: S3Server, traces: Path, tmp_path: Path
) -> None:
    """OUT in storage holds the first rows of a cut run: `resume` scores only the rest, and
    the object then holds the whole run's rows."""
    rescore([traces], SPEC, tmp_path / "full.jsonl")
    full = (tmp_path / "full.jsonl").read_text().splitlines(keepends=True)
    server.admin.put_object(Bucket="results", Key="resume/s.jsonl", Body="".join(full[:2]).encode())
    summary = rescore(["s3://traces/out-tests/"], SPEC, "s3://results/resume/s.jsonl", resume=True)
    assert (summary.counts.resumed, summary.turns_scored) == (2, 4)
    stored = _object(server, "resume/s.jsonl")
    assert stored is not None
    assert sorted(stored.decode().splitlines(keepends=True)) == sorted(full)
