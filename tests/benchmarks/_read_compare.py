"""The read path's cost per stage at an earlier revision and in this tree, measured alike.

`python -m tests.benchmarks.bench_offline compare REV` takes `src/` of git revision REV (`git
archive`, into a temporary folder), generates the peer's slice of the offline benchmark file (an
eighth of it), and alternates fresh processes, one on REV's code, one on this tree's, ROUNDS
times: each measures `bench_offline._read_stages` (parsing, window reassembly, assembly; CPU µs
per span) and the peer, protobuf's JSON parse, on the same file. The medians go into
results/offline.json as `read_stages_compared`, so "before" and "after" come from one run on one
machine, under the same load. Only `groundwire` comes from REV; the measuring code is this tree's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROUNDS = 5
_ROOT = Path(__file__).resolve().parents[2]
_CHILD = (
    "import json, sys; from pathlib import Path; from tests.benchmarks import _read_compare; "
    "print(json.dumps(_read_compare.measure(Path(sys.argv[1]), int(sys.argv[2]))))"
)


def measure(path: Path, lines: int) -> dict[str, Any]:
    """In a child process: the stages of the read path and the peer, in CPU µs per span."""
    from tests.benchmarks import bench_offline

    stages = bench_offline._read_stages(path, lines)
    peer = bench_offline._peer_parse(path, lines)
    return {**stages, "peer_us_per_span": 1e6 / peer["spans_per_cpu_s"]}


def _source_of(revision: str, into: Path) -> Path:
    """`src/` of `revision`, extracted under `into`."""
    archive = subprocess.run(
        ["git", "-C", str(_ROOT), "archive", revision, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def _child(source: Path, path: Path, lines: int) -> dict[str, Any]:
    """One measurement in a fresh process importing `groundwire` from `source`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), str(_ROOT)])}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(lines)],
        env=env,
        cwd=_ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _medians(runs: list[dict[str, Any]]) -> dict[str, float]:
    """The median of each figure over the rounds (an even count takes the upper middle)."""
    keys = [key for key in runs[0] if key != "spans"]
    return {key: sorted(run[key] for run in runs)[len(runs) // 2] for key in keys}


def compare(revision: str, results: Path, generate: Any, target_bytes: int) -> None:
    """Measure `revision` against this tree (module docstring); merge into `results`."""
    short = subprocess.run(
        ["git", "-C", str(_ROOT), "rev-parse", "--short", revision],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    load_at_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="gw-read-compare-") as folder:
        work = Path(folder)
        before_source = _source_of(revision, work)
        path = work / "slice.jsonl"
        generated = generate(path, target_bytes // 8)
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for number in range(ROUNDS):
            for side, source in (("before", before_source), ("after", _ROOT / "src")):
                runs[side].append(_child(source, path, generated["lines"]))
            print(f"round {number + 1}/{ROUNDS} done", flush=True)
        shutil.rmtree(before_source, ignore_errors=True)
    compared: dict[str, Any] = {
        "before_revision": short,
        "rounds": ROUNDS,
        "spans": runs["after"][0]["spans"],
        "load_average_1m_at_start": load_at_start,
        "load_average_1m_at_end": os.getloadavg()[0],
    }
    for side, side_runs in runs.items():
        compared[side] = _medians(side_runs)
        compared[side]["ratio_to_peer_runs"] = sorted(
            run["peer_us_per_span"] / run["full_us_per_span"] for run in side_runs
        )
    data = json.loads(results.read_text(encoding="utf-8"))
    data["read_stages_compared"] = compared
    results.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
