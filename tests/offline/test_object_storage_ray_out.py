"""A Parquet OUT in object storage on Ray: the workers upload their parts under OUT's prefix
themselves (each object whole); a failed run leaves them under the partial prefix and says so;
`resume` finishes them. Against moto's S3 server."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundwire._evaluator import JUDGE_UNREACHABLE
from groundwire.offline import RescoreSummary, rescore
from groundwire.testing import OpenAIServer, structured
from tests.offline._ray_local import local_ray
from tests.offline._s3_server import S3Server, s3_reader
from tests.offline._traces import record_turns, write_groundwire_jsonl

ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
pytest.importorskip("s3fs", reason="the s3 extra (fsspec, s3fs) is not installed")
pytest.importorskip("moto.server", reason="moto[server] is not installed")
pq = pytest.importorskip("pyarrow.parquet")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

SPEC: dict[str, dict[str, Any]] = {"quoted_spans": {}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """The S3 server (its reader's credentials set before Ray starts, so the workers have
    them) and eight turns stored as s3://traces/ray-out/t.jsonl."""
    path = write_groundwire_jsonl(record_turns(8), tmp_path_factory.mktemp("t") / "t.jsonl")
    with s3_reader() as running, local_ray(ray):
        running.admin.upload_file(str(path), "traces", "ray-out/t.jsonl")
        yield running


def _keys(server: S3Server, prefix: str) -> list[str]:
    """The keys under `prefix` in the results bucket."""
    listed = server.admin.list_objects_v2(Bucket="results", Prefix=prefix)
    return sorted(item["Key"] for item in listed.get("Contents", []))


def _rows(server: S3Server, keys: list[str]) -> list[dict[str, Any]]:
    """The rows of these Parquet objects, sorted by turn."""
    rows: list[dict[str, Any]] = []
    for key in keys:
        body = server.admin.get_object(Bucket="results", Key=key)["Body"].read()
        rows += pq.read_table(io.BytesIO(body)).to_pylist()
    return sorted(rows, key=lambda row: (row["trace_id"], row["span_id"]))


def _failing_once_scored(summary: RescoreSummary) -> None:
    """A progress hook that fails the run once some rows were written."""
    if summary.turns_scored:
        raise RuntimeError("the run broke")


def test_the_workers_upload_the_local_rows_as_parts(server: S3Server, tmp_path: Path) -> None:
    """OUT's prefix holds `part-00000.parquet`, ... with the local engine's rows; nothing is
    left under the partial prefix."""
    source = ["s3://traces/ray-out/t.jsonl"]
    rescore(source, SPEC, tmp_path / "local.parquet")
    summary = rescore(
        source, SPEC, "s3://results/rp/o.parquet", engine="ray", workers=2, chunk_size=2
    )
    keys = _keys(server, "rp/")
    assert len(keys) > 1
    assert keys == [f"rp/o.parquet/part-{i:05d}.parquet" for i in range(len(keys))]
    local = pq.read_table(tmp_path / "local.parquet").to_pylist()
    assert _rows(server, keys) == sorted(local, key=lambda row: (row["trace_id"], row["span_id"]))
    assert summary.turns_scored == 8 and str(summary.out) == "s3://results/rp/o.parquet"


def test_a_failed_run_leaves_its_parts_under_the_partial_prefix(server: S3Server) -> None:
    """No object under OUT's prefix, whole parts under the partial one, named in the notice;
    `resume` takes them and moves every part under OUT's prefix, each turn once."""
    source = ["s3://traces/ray-out/t.jsonl"]
    notices: list[str] = []
    with pytest.raises(RuntimeError, match="the run broke"):
        rescore(
            source, SPEC, "s3://results/rf/o.parquet", engine="ray", workers=1, chunk_size=2,
            progress=_failing_once_scored, on_problem=notices.append,
        )  # fmt: skip
    assert _keys(server, "rf/o.parquet") == []
    parts = _keys(server, "rf/o.partial.parquet/")
    assert parts and all(key.rpartition("/")[2].startswith("part-") for key in parts)
    assert notices[-1].startswith("the run failed: the ")
    assert notices[-1].endswith("results written are kept in s3://results/rf/o.partial.parquet")
    resumed = rescore(source, SPEC, "s3://results/rf/o.parquet", engine="ray", resume=True)
    assert resumed.counts.resumed >= 2
    assert resumed.counts.resumed + resumed.turns_scored == 8
    assert _keys(server, "rf/o.partial.parquet/") == []
    rows = _rows(server, _keys(server, "rf/o.parquet/"))
    assert len(rows) == len({(row["trace_id"], row["span_id"]) for row in rows}) == 8


def _skipped(row: dict[str, Any]) -> bool:
    """True for a row whose groundedness was skipped because the judge was unreachable."""
    entry = json.loads(row["details"])["groundedness"]
    return (entry["details"] or {}).get("skip_reason") == JUDGE_UNREACHABLE


def test_resume_takes_the_rows_to_score_again_out_of_the_stored_parts(
    server: S3Server, tmp_path: Path
) -> None:
    """A stored parts OUT holding turns a dead judge skipped: `resume` on Ray sends the repaired
    parts back before the workers add theirs, so the stored OUT holds each turn once, scored."""
    source = ["s3://traces/ray-out/t.jsonl"]
    judge = {"model": "judge-model", "api_key": "k", "cache": "off", "timeout_s": 5.0,
             "backoff_base_s": 0.01, "backoff_max_s": 0.02}  # fmt: skip
    refusing = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    refusing.bind(("127.0.0.1", 0))
    port = refusing.getsockname()[1]
    down = {
        "quoted_spans": {},
        "groundedness": {**judge, "base_url": f"http://127.0.0.1:{port}/v1"},
    }
    first = tmp_path / "first.parquet"
    rescore(source, down, first, concurrency=1)
    skipped = [row for row in pq.read_table(first).to_pylist() if _skipped(row)]
    assert skipped, "the dead judge skipped no turn"
    server.admin.upload_file(str(first), "results", "rs/o.parquet/part-00000.parquet")
    refusing.close()
    with OpenAIServer(structured({"rating": 2}), port=port) as judge_server:
        up = {**down, "groundedness": {**judge, "base_url": judge_server.base_url}}
        resumed = rescore(source, up, "s3://results/rs/o.parquet", engine="ray", resume=True)
    assert resumed.turns_scored == len(skipped)
    rows = _rows(server, _keys(server, "rs/o.parquet/"))
    assert len(rows) == len({(row["trace_id"], row["span_id"]) for row in rows}) == 8
    assert not any(_skipped(row) for row in rows)
