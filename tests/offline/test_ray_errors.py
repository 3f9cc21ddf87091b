"""`engine="ray"` fails as the local engine does: the same error, message and exit status for a
bad record under `--strict` and for a `--format` the file contradicts, and one line naming the
address (exit 2, in seconds) when the Ray cluster cannot be reached."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.offline import rescore
from groundwire.offline.ray_engine import RayAddressError
from groundwire.offline.readers import BadRecordError, FormatMismatchError
from tests.offline._ray_cluster import free_port
from tests.offline._ray_local import local_ray as _local_ray
from tests.offline._traces import record_turns, write_groundwire_jsonl

ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]


def _cli(*args: str | Path) -> tuple[int, str]:
    """`groundwire rescore ARGS` in-process: (exit status, stderr); never a traceback."""
    result = CliRunner().invoke(app, ["rescore", *(str(arg) for arg in args)])
    assert "Traceback" not in result.output
    return result.exit_code, result.stderr


@pytest.mark.timeout(60)
def test_an_unreachable_cluster_is_one_line_naming_it_in_seconds(tmp_path: Path) -> None:
    """Nothing listening at --ray-address: exit 2 and one line naming the address, at once
    (Ray itself retries for minutes, then exits the process). Runs before this module starts
    its local Ray: with Ray already connected, the address is not used."""
    assert not ray.is_initialized(), "a Ray left connected by an earlier test"
    traces = write_groundwire_jsonl(record_turns(2), tmp_path / "t.jsonl", batch=3)
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    with pytest.raises(RayAddressError, match=f"cannot reach the Ray cluster at {address}"):
        rescore([traces], ["quoted_spans"], tmp_path / "o.jsonl", engine="ray", ray_address=address)
    code, stderr = _cli(
        traces,
        "-e",
        "quoted_spans",
        "-o",
        tmp_path / "o.jsonl",
        "--engine",
        "ray",
        "--ray-address",
        address,
    )
    assert time.monotonic() - started < 30
    assert code == ExitCode.BAD_ARGUMENTS
    assert f"error: cannot reach the Ray cluster at {address} (" in stderr
    assert not ray.is_initialized()


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    """One local Ray instance for the module (the CLI runs in this process and uses it)."""
    with _local_ray(ray):
        yield


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two files of 4 turns each; the second ends in a record that is not JSON."""
    folder = tmp_path_factory.mktemp("errors")
    spans = record_turns(8)
    good = write_groundwire_jsonl(spans[:12], folder / "a.jsonl", batch=3)
    bad = write_groundwire_jsonl(spans[12:], folder / "b.jsonl", batch=3)
    with bad.open("a") as file:
        file.write('{"resourceSpans": [\n')
    return good, bad


def _both(files: list[Path], out: Path, error: type[Exception], **options: Any) -> str:
    """Run the local engine and Ray on `files`; both raise `error`: its (equal) message."""
    messages = []
    for engine in ("local", "ray"):
        with pytest.raises(error) as raised:
            rescore(
                files,
                ["quoted_spans"],
                out.with_suffix(f".{engine}.jsonl"),
                engine=engine,
                **options,
            )
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    return messages[0]


def test_a_bad_record_under_strict_is_the_local_engines_error(
    local_ray: None, traces: tuple[Path, Path], tmp_path: Path
) -> None:
    """--strict and a record that is not JSON: Ray raises the local engine's BadRecordError
    (file and line), and the command exits 3 with the same line on both engines."""
    message = _both(list(traces), tmp_path / "o", BadRecordError, strict=True)
    assert message.startswith(f"{traces[1]}:5: not valid JSON")
    lines = []
    for engine in ("local", "ray"):
        out = tmp_path / f"cli-{engine}.jsonl"
        code, stderr = _cli(
            *traces, "-e", "quoted_spans", "-o", out, "--strict", "--engine", engine
        )
        assert code == ExitCode.PARTIAL_INPUT, stderr
        lines.append(next(line for line in stderr.splitlines() if line.startswith("error:")))
    assert lines[0] == lines[1] == f"error: {message} (--strict)"


def test_a_format_the_file_contradicts_is_the_local_engines_error(
    local_ray: None, traces: tuple[Path, Path], tmp_path: Path
) -> None:
    """--format jaeger on OTLP/JSON files: Ray raises the local engine's FormatMismatchError
    (not 0 spans and no error), and the command exits 2 with the same line on both engines."""
    message = _both([traces[0]], tmp_path / "o", FormatMismatchError, fmt="jaeger")
    assert message.startswith(f"{traces[0]} is OTLP/JSON (otlp-json), not Jaeger JSON")
    lines = []
    for engine in ("local", "ray"):
        out = tmp_path / f"cli-{engine}.jsonl"
        code, stderr = _cli(
            traces[0], "-e", "quoted_spans", "-o", out, "--format", "jaeger", "--engine", engine
        )
        assert code == ExitCode.BAD_ARGUMENTS, stderr
        lines.append(next(line for line in stderr.splitlines() if line.startswith("error:")))
    assert lines[0] == lines[1] == f"error: {message}"
