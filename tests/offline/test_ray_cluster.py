"""`--engine ray` on a real two-node Ray cluster on loopback, and losing the worker node mid-run.

Both nodes are separate `ray start` processes (own temp folders, token auth, one CPU each); the
driver is the `groundwire rescore` command in its own process, as a user would run it. Slow
(the cluster takes tens of seconds to start on a shared machine), so only two tests share it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.offline._traces import record_turns, write_groundwire_jsonl

pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")

from tests.offline._ray_cluster import RayCluster

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
TURNS = 120
CLI = (sys.executable, "-c", "from groundwire.cli import main; main()", "rescore")


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    """A head node and a worker node, stopped (by process group) and removed afterwards."""
    started = RayCluster()
    try:
        yield started.start()
    finally:
        started.stop()


@pytest.fixture(scope="module")
def rotated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """TURNS turns as four rotated files, traces straddling the rotation points."""
    folder = tmp_path_factory.mktemp("rotated")
    spans = record_turns(TURNS)
    whole = write_groundwire_jsonl(spans, folder / "whole.jsonl", batch=2)
    lines = whole.read_text().splitlines(keepends=True)
    whole.unlink()
    step = len(lines) // 4 + 1
    for index in range(4):
        part = folder / "traces" / f"traces-{index}.jsonl"
        part.parent.mkdir(exist_ok=True)
        part.write_text("".join(lines[index * step : (index + 1) * step]))
    return folder / "traces"


def _rescore(cluster: RayCluster, *args: str) -> subprocess.Popen[str]:
    """The `groundwire rescore` command as its own process, in the cluster's environment."""
    return subprocess.Popen(
        [*CLI, *args],
        env=cluster.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finish(process: subprocess.Popen[str], timeout: float = 300.0) -> tuple[int, str]:
    """Exit status and stderr; a run that hangs is ended (its process group) and fails."""
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"groundwire rescore on Ray did not finish in {timeout:.0f} s")
    return process.returncode, stderr


def _keys(path: Path) -> list[tuple[str, str]]:
    """(trace_id, span_id) of each output row."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [(row["trace_id"], row["span_id"]) for row in rows]


def test_two_node_cluster_gives_the_local_engines_rows(
    cluster: RayCluster, rotated: Path, tmp_path: Path
) -> None:
    """A folder of rotated files on a two-node cluster: the local engine's rows, same order."""
    local = tmp_path / "local.jsonl"
    done = _rescore(cluster, str(rotated), "-e", "quoted_spans", "-o", str(local), "-q")
    assert _finish(done)[0] == 0
    on_ray = tmp_path / "ray.jsonl"
    run = _rescore(
        cluster,
        str(rotated),
        "-e",
        "quoted_spans",
        "-o",
        str(on_ray),
        "--engine",
        "ray",
        "--ray-address",
        cluster.address,
        "--workers",
        "2",
    )
    status, stderr = _finish(run)
    assert status == 0, stderr[-3000:]
    assert f"{TURNS} turns" in stderr and "4 file(s)" in stderr
    assert on_ray.read_text().splitlines() == local.read_text().splitlines()
    assert len(set(_keys(on_ray))) == TURNS


_OUR_TASKS = (b"read_ranges", b"assemble_range", b"score_batches")
"""The titles of the Ray engine's own tasks (reading, assembling, scoring): `ray::<name>`."""


def _busy_child(raylet: int) -> bool:
    """True once a worker process of `raylet` runs one of our tasks or actors."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = next(
            (line.split()[1] for line in status.splitlines() if line.startswith("PPid")), ""
        )
        ours = any(name in command for name in _OUR_TASKS)
        if parent == str(raylet) and command.startswith(b"ray::") and ours:
            return True
    return False


def test_losing_the_worker_node_mid_run_leaves_no_gap(
    cluster: RayCluster, rotated: Path, tmp_path: Path
) -> None:
    """Worker raylet killed mid-run: the job finishes or fails clearly, then --resume completes.

    Either way every turn ends up in OUT exactly once (Ray retries, or the resumable output).
    """
    out = tmp_path / "out.jsonl"
    args = ["-e", "quoted_spans", "-o", str(out), "--engine", "ray", "--ray-address"]
    run = _rescore(cluster, str(rotated), *args, cluster.address, "--workers", "2")
    raylet = cluster.raylet_pid("worker")
    deadline = time.monotonic() + 240
    while not _busy_child(raylet):
        assert run.poll() is None, "the run ended before the worker node took any work"
        assert time.monotonic() < deadline, "the worker node never took any work"
        time.sleep(0.01)
    os.kill(raylet, signal.SIGKILL)
    status, stderr = _finish(run)
    print(f"after the worker node was lost: exit status {status}; {stderr[-600:]}")
    assert "Traceback" not in stderr, stderr[-3000:]
    if status != 0:
        assert "the Ray job failed" in stderr and "--resume" in stderr, stderr[-3000:]
        keys = _keys(out) if out.exists() else []
        assert len(keys) == len(set(keys)), "no turn written twice before the failure"
        again = _rescore(cluster, str(rotated), *args, cluster.address, "--resume")
        again_status, again_stderr = _finish(again)
        assert again_status == 0, again_stderr[-3000:]
    keys = _keys(out)
    assert len(keys) == len(set(keys)) == TURNS, "every turn scored exactly once"
