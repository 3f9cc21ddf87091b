"""`engine="ray"` reading objects: each Ray task streams its object from S3 (moto's server)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from groundwire.offline import rescore
from tests.offline._ray_local import local_ray
from tests.offline._s3_server import S3Server, s3_reader
from tests.offline._traces import record_turns, write_groundwire_jsonl

ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
pytest.importorskip("s3fs", reason="the s3 extra (fsspec, s3fs) is not installed")
pytest.importorskip("moto.server", reason="moto[server] is not installed")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server() -> Iterator[S3Server]:
    """The S3 server, its reader's credentials set before Ray starts (its workers inherit them,
    as the workers of a cluster take theirs from their node's environment)."""
    with s3_reader() as running, local_ray(ray):
        yield running


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_reads_objects_and_gives_the_local_rows(server: S3Server, tmp_path: Path) -> None:
    """Traces split across two objects: Ray groups them whole, and its rows are the local
    engine's rows over the same files read locally."""
    spans = record_turns(6)
    whole = write_groundwire_jsonl(spans, tmp_path / "whole.jsonl", batch=2)
    lines = whole.read_text().splitlines(keepends=True)
    first, second = tmp_path / "b.jsonl", tmp_path / "a.jsonl"
    first.write_text("".join(lines[: len(lines) // 2]))
    second.write_text("".join(lines[len(lines) // 2 :]))
    for file in (first, second):
        server.admin.upload_file(str(file), "traces", f"ray/{file.name}")
    spec = {"quoted_spans": {}}
    local = rescore([first, second], spec, tmp_path / "local.jsonl")
    on_ray = rescore(["s3://traces/ray/"], spec, tmp_path / "ray.jsonl", engine="ray", workers=1)
    assert sorted((tmp_path / "ray.jsonl").read_text().splitlines()) == sorted(
        (tmp_path / "local.jsonl").read_text().splitlines()
    )
    assert on_ray.turns_scored == local.turns_scored == 6
    assert (on_ray.read.files, on_ray.read.spans) == (2, 18)
