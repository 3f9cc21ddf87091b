"""Object storage in and out (`s3://`), against a real S3-protocol server on loopback.

The server (moto's server mode, `tests/offline/_s3_server.py`) checks signatures and policies,
so a denied bucket and a wrong key are refused as AWS refuses them. The same traces are read
from objects and from local files: the rows must be the same.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import logging
import threading
import tracemalloc
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.offline import Problems, read_spans, rescore
from groundwire.offline._inputs import expand_inputs
from groundwire.offline.readers import open_source
from groundwire.offline.storage import BLOCK_SIZE
from tests.offline._s3_server import DENIED, S3Server, reader_server  # noqa: F401 (the fixture)
from tests.offline._traces import gzip_copy, record_turns, write_groundwire_jsonl

pytest.importorskip("s3fs", reason="the s3 extra (fsspec, s3fs) is not installed")
pytest.importorskip("moto.server", reason="moto[server] is not installed")

SPEC: dict[str, dict[str, Any]] = {"quoted_spans": {}}


@pytest.fixture(scope="module")
def local_copy(server: S3Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Traces as local files, and the same files as objects under s3://traces/otel/.

    Nested keys, gzip and zstd, a non-trace object (passed over and named) and traces split
    across two objects (grouped whole).
    """
    import zstandard

    folder = tmp_path_factory.mktemp("objects")
    spans = record_turns(8)
    whole = write_groundwire_jsonl(spans, folder / "whole.jsonl", batch=2)
    lines = whole.read_text().splitlines(keepends=True)
    whole.unlink()
    (folder / "2026-11").mkdir()
    (folder / "2026-11" / "b.jsonl").write_text("".join(lines[: len(lines) // 2]))
    (folder / "a.jsonl").write_text("".join(lines[len(lines) // 2 : -2]))
    zst = folder / "2026-11" / "c.jsonl.zst"
    zst.write_bytes(zstandard.ZstdCompressor().compress("".join(lines[-2:]).encode()))
    gzip_copy(folder / "a.jsonl")
    (folder / "a.jsonl").unlink()
    (folder / "README.txt").write_text("not traces")
    for file in sorted(folder.rglob("*")):
        if file.is_file():
            key = f"otel/{file.relative_to(folder).as_posix()}"
            server.admin.upload_file(str(file), "traces", key)
    return folder


def _rows(path: Path) -> list[str]:
    """The output's lines, sorted (engines may order turns differently)."""
    return sorted(path.read_text().splitlines())


def _run(*args: str | Path) -> tuple[int, str, str]:
    """`groundwire rescore ARGS` in-process: (exit code, stdout, stderr)."""
    result = CliRunner().invoke(app, ["rescore", *(str(a) for a in args)])
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def test_a_prefix_gives_the_rows_of_the_same_files_read_locally(
    local_copy: Path, tmp_path: Path
) -> None:
    """Recursive, sorted, compressed, split traces grouped whole: as from the local folder."""
    notices: list[str] = []
    remote = rescore(
        ["s3://traces/otel/"], SPEC, tmp_path / "remote.jsonl", on_problem=notices.append
    )
    local = rescore([local_copy], SPEC, tmp_path / "local.jsonl", on_problem=lambda _: None)
    assert _rows(tmp_path / "remote.jsonl") == _rows(tmp_path / "local.jsonl")
    assert remote.turns_scored == local.turns_scored == 8
    assert (remote.read.files, remote.read.spans) == (local.read.files, local.read.spans) == (3, 24)
    assert remote.total_bytes == local.total_bytes
    names = "*{.json,.jsonl,.ndjson,.pb,.binpb,.proto,.otlp}[.gz|.zst]"
    assert notices == [f"s3://traces/otel/: skipped 1 file(s) not named {names}: README.txt"]


def test_two_workers_give_the_same_rows(local_copy: Path, tmp_path: Path) -> None:
    """`workers=2` reads the objects in its worker processes: the same rows."""
    rescore([local_copy], SPEC, tmp_path / "local.jsonl", on_problem=lambda _: None)
    two = rescore(["s3://traces/otel/"], SPEC, tmp_path / "two.jsonl", workers=2)
    assert two.workers == 2 and two.turns_scored == 8
    assert _rows(tmp_path / "two.jsonl") == _rows(tmp_path / "local.jsonl")


def test_a_prefix_lists_its_objects_sorted_by_key_and_glob_matches_below_it(
    local_copy: Path,
) -> None:
    """Sorted by key at any depth; `glob` matched from the right against the key below the
    prefix, as against a path below a folder; a trailing slash or none is the same prefix."""
    everything = expand_inputs(["s3://traces/otel"], on_problem=lambda _: None)
    assert everything == [
        "s3://traces/otel/2026-11/b.jsonl",
        "s3://traces/otel/2026-11/c.jsonl.zst",
        "s3://traces/otel/a.jsonl.gz",
    ]
    assert expand_inputs(["s3://traces/otel/"], glob="2026-11/*") == everything[:2]
    assert expand_inputs(["s3://traces/otel/"], glob="*.gz") == everything[2:]
    local = expand_inputs([local_copy], glob="2026-11/*")
    assert [path.relative_to(local_copy).as_posix() for path in local] == [  # type: ignore[union-attr]
        "2026-11/b.jsonl",
        "2026-11/c.jsonl.zst",
    ]
    one = expand_inputs(["s3://traces/otel/a.jsonl.gz"])
    assert one == ["s3://traces/otel/a.jsonl.gz"]


def test_an_object_is_streamed_in_bounded_memory(server: S3Server, local_copy: Path) -> None:
    """Reading a 40 MiB object holds a few range blocks at a time (each fetched block is
    copied a few times on its way), never the whole object."""
    size = 40 << 20
    line = b'{"resourceSpans": []}' + b" " * 100 + b"\n"
    server.admin.put_object(Bucket="traces", Key="big/big.jsonl", Body=line * (size // len(line)))
    with open_source("s3://traces/otel/a.jsonl.gz"):  # the client's own set-up is not measured
        pass
    tracemalloc.start()
    try:
        with open_source("s3://traces/big/big.jsonl") as source:
            read = 0
            while chunk := source.stream.read(1 << 16):
                read += len(chunk)
            assert source.position == source.size == read
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert read >= size - len(line)
    assert peak < 6 * BLOCK_SIZE < size


def test_a_cut_object_is_reported_by_object_and_line(
    server: S3Server, local_copy: Path, tmp_path: Path
) -> None:
    """A gzip object cut short: its records before the cut are scored, one line names the
    object and the line, exit PARTIAL_INPUT."""
    data = gzip.compress((local_copy / "2026-11" / "b.jsonl").read_bytes())
    server.admin.put_object(Bucket="traces", Key="cut/b.jsonl.gz", Body=data[: len(data) * 2 // 3])
    code, _, err = _run("s3://traces/cut/", "-e", "quoted_spans", "-o", tmp_path / "o.jsonl", "-q")
    assert code == ExitCode.PARTIAL_INPUT
    damaged = [line for line in err.splitlines() if "s3://traces/cut/b.jsonl.gz" in line]
    assert len(damaged) == 1
    assert "gzip stream ends early after line" in damaged[0]


def test_missing_objects_are_one_clear_line(server: S3Server, tmp_path: Path) -> None:
    """A prefix with nothing under it is a bad argument (exit 2); an object that vanishes
    between listing and reading is reported by the reader like an unreadable file."""
    code, _, err = _run(
        "s3://traces/nothing-here/", "-e", "quoted_spans", "-o", tmp_path / "o.jsonl", "-q"
    )
    assert code == ExitCode.BAD_ARGUMENTS
    assert err.strip() == "error: no such trace file or folder: s3://traces/nothing-here"
    problems = Problems()
    assert list(read_spans(["s3://traces/vanished.jsonl"], problems)) == []
    assert problems.stats.bad_records == 1


def test_a_denied_bucket_is_one_clear_line(server: S3Server, tmp_path: Path) -> None:
    """The server refuses the reader's request: exit 2, one line saying access was denied."""
    server.admin.put_object(Bucket=DENIED, Key="otel/a.jsonl", Body=b"{}\n")
    code, _, err = _run(
        f"s3://{DENIED}/otel/", "-e", "quoted_spans", "-o", tmp_path / "o.jsonl", "-q"
    )
    assert code == ExitCode.BAD_ARGUMENTS
    assert err.strip().splitlines() == [
        f"error: cannot list s3://{DENIED}/otel: access denied (Forbidden); check the "
        "credentials (environment variables, profile) and the bucket's permissions"
    ]


def test_bad_credentials_are_one_clear_line_and_no_secret_is_ever_shown(
    server: S3Server, local_copy: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong secret key: exit 2, one line; neither it nor the real one appears in any output
    or log record, even with every logger at DEBUG."""
    caplog.set_level(logging.DEBUG)
    wrong = "wrong-secret-0123456789abcdef"
    result = CliRunner(env={"AWS_SECRET_ACCESS_KEY": wrong}).invoke(
        app,
        [
            "rescore",
            "s3://traces/otel/",
            "-e",
            "quoted_spans",
            "-q",
            "-o",
            str(tmp_path / "o.jsonl"),
        ],
    )
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert len(result.stderr.strip().splitlines()) == 1
    assert "access denied" in result.stderr
    good = _run("s3://traces/otel/", "-e", "quoted_spans", "-o", "s3://results/o.csv")
    assert good[0] == ExitCode.OK
    secret = server.environ["AWS_SECRET_ACCESS_KEY"]
    for text in (result.output, caplog.text, *good[1:]):
        assert wrong not in text and secret not in text


def test_https_objects_and_a_missing_filesystem_package(local_copy: Path, tmp_path: Path) -> None:
    """An `https://`-style URL is read through fsspec's HTTP filesystem (here plain HTTP on
    loopback) with the rows of the local file; a scheme whose package is missing (gcsfs) is one
    line naming what to install, exit 2."""
    pytest.importorskip("aiohttp", reason="fsspec's HTTP filesystem needs aiohttp")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(local_copy))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as http:
        thread = threading.Thread(target=http.serve_forever, daemon=True)
        thread.start()
        try:
            port = http.server_address[1]
            url = f"http://127.0.0.1:{port}/2026-11/b.jsonl"
            remote = rescore([url], SPEC, tmp_path / "http.jsonl")
        finally:
            http.shutdown()
    rescore([local_copy / "2026-11" / "b.jsonl"], SPEC, tmp_path / "local.jsonl")
    assert _rows(tmp_path / "http.jsonl") == _rows(tmp_path / "local.jsonl")
    assert remote.read.files == 1 and remote.read.spans > 0
    if importlib.util.find_spec("gcsfs") is None:
        code, _, err = _run(
            "gs://bucket/traces/", "-e", "quoted_spans", "-o", tmp_path / "o.jsonl", "-q"
        )
        assert code == ExitCode.BAD_ARGUMENTS
        assert err.strip() == (
            "error: gs:// inputs and outputs need fsspec and gcsfs: pip install fsspec gcsfs"
        )
