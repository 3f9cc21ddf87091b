"""`engine="ray"` without `--strict` reports bad records as the local engine does: the same
messages to `on_problem` (same text, same order), the same counters and rows, the same
`groundwire:` lines on the command's stderr, nothing printed in the Ray workers' logs; and a
file with more bad records than are passed on (`MAX_FILE_MESSAGES`) gives the same first ones
and the same line saying how many were not shown, on both engines."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.offline import rescore
from groundwire.offline._ray_reads import READ_COUNTERS
from groundwire.offline.readers import MAX_FILE_MESSAGES
from tests.offline._ray_local import local_ray as _local_ray
from tests.offline._traces import record_turns, write_groundwire_jsonl

ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]

_BAD_ID = '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz", "spanId": "1"}]}]}]}'


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Path]:
    """One local Ray instance for the module (the CLI runs in this process and uses it); its
    temp folder, where the workers' logs are."""
    with _local_ray(ray) as temp:
        yield temp


def _insert(path: Path, at: dict[int, str]) -> Path:
    """Put the lines `at` (line index -> text) into the file at `path`, before those indexes."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for index in sorted(at, reverse=True):
        lines.insert(index, at[index])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three files of good turns with damage of each kind: lines that are not JSON and a span
    with a bad trace id (skipped records), and a gzip stream cut short (a damaged file)."""
    folder = tmp_path_factory.mktemp("damaged")
    spans = record_turns(40)
    first = write_groundwire_jsonl(spans[:9], folder / "a.jsonl", batch=3)
    _insert(first, {0: "not json", 2: _BAD_ID, 3: '{"resourceSpans": ['})
    second = write_groundwire_jsonl(spans[9:18], folder / "b.jsonl", batch=2)
    _insert(second, {1: "[1, 2"})
    plain = write_groundwire_jsonl(spans[18:], folder / "c.jsonl", batch=3).read_bytes()
    packed = gzip.compress(plain)
    cut = folder / "c.jsonl.gz"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    return [first, second, cut]


def _both(files: list[Path], folder: Path) -> dict[str, tuple[list[str], dict[str, int], str]]:
    """Re-score `files` on each engine: the messages `on_problem` got, the read counters and
    the output's text."""
    seen = {}
    for engine in ("local", "ray"):
        messages: list[str] = []
        out = folder / f"{engine}.jsonl"
        summary = rescore(files, ["quoted_spans"], out, engine=engine, on_problem=messages.append)
        counters = {name: getattr(summary.read, name) for name in READ_COUNTERS}
        assert summary.read.bad_examples == messages[:20]
        seen[engine] = (messages, counters, out.read_text(encoding="utf-8"))
    return seen


def _worker_logs(temp: Path) -> str:
    """Everything the local Ray's workers wrote to their logs so far."""
    logs = sorted((temp / "session_latest" / "logs").glob("worker-*"))
    assert logs, f"no worker logs under {temp}"
    return "".join(log.read_text(encoding="utf-8", errors="replace") for log in logs)


def test_bad_records_reach_on_problem_as_on_the_local_engine(
    local_ray: Path, damaged: list[Path], tmp_path: Path
) -> None:
    """Records that are not JSON, a bad trace id and a cut gzip stream: Ray hands `on_problem`
    the local engine's messages, in the same order (files' order, then lines), once each, and
    gives the same counters and rows; the workers print none of them in their logs."""
    seen = _both(damaged, tmp_path)
    assert seen["ray"] == seen["local"]
    messages, counters, rows = seen["local"]
    assert len(messages) == counters["bad_records"] == 5
    assert counters["damaged_files"] == 1 and len(rows.splitlines()) > 3
    assert messages[0].startswith(f"{damaged[0]}:1: skipped: not valid JSON")
    files = [str(damaged[0])] * 3 + [str(damaged[1]), str(damaged[2])]
    assert [message.split(":")[0] for message in messages] == files
    assert "gzip stream ends early" in messages[-1]
    assert str(damaged[0]) not in _worker_logs(local_ray)


def _cli_notices(files: list[Path], out: Path, engine: str) -> list[str]:
    """`groundwire rescore FILES --engine ENGINE`'s `groundwire:` lines on stderr (exit 3:
    partial input)."""
    args = [*map(str, files), "-e", "quoted_spans", "-o", str(out), "--engine", engine]
    result = CliRunner().invoke(app, ["rescore", *args])
    assert "Traceback" not in result.output
    assert result.exit_code == ExitCode.PARTIAL_INPUT, result.stderr
    return [line for line in result.stderr.splitlines() if line.startswith("groundwire: ")]


def test_the_commands_stderr_lines_are_the_local_engines(
    local_ray: Path, damaged: list[Path], tmp_path: Path
) -> None:
    """The command prints the same `groundwire:` lines on both engines: each bad record once,
    by file and line, in the files' order."""
    local = _cli_notices(damaged, tmp_path / "local.jsonl", "local")
    on_ray = _cli_notices(damaged, tmp_path / "ray.jsonl", "ray")
    assert on_ray == local
    bad = [line for line in local if line.startswith(f"groundwire: {damaged[0]}:")]
    assert len(bad) == 3 and len(set(local)) == len(local) >= 5


def test_a_file_with_more_bad_records_than_carried_says_how_many_were_left_out(
    local_ray: Path, tmp_path: Path
) -> None:
    """`MAX_FILE_MESSAGES` + 7 bad lines in one file: both engines pass on the first
    `MAX_FILE_MESSAGES` messages, then the same line counting the 7 not shown; the counters
    (every bad record) and the rows are the same."""
    spans = record_turns(3)
    path = write_groundwire_jsonl(spans, tmp_path / "many.jsonl", batch=3)
    _insert(path, {1: "\n".join(f"bad {index}" for index in range(MAX_FILE_MESSAGES + 7))})
    seen = _both([path], tmp_path)
    local, ray_messages = seen["local"][0], seen["ray"][0]
    assert seen["local"][1]["bad_records"] == MAX_FILE_MESSAGES + 7
    assert ray_messages == local and len(local) == MAX_FILE_MESSAGES + 1
    assert local[-1] == (
        f"{path}: 7 more bad records not shown (only the first {MAX_FILE_MESSAGES} of a file are)"
    )
    assert seen["ray"][1] == seen["local"][1]
    rows = [sorted(seen[engine][2].splitlines()) for engine in ("local", "ray")]
    assert rows[0] == rows[1] and len(rows[0]) == 3  # one file: Ray's order is `order_key`'s
