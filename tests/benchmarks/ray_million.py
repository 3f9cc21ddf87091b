"""The million-turn run: an archive's worth of traces re-scored on the two-node loopback cluster.

    python -m tests.benchmarks.ray_million              # 1,000,000 turns, in and out of S3
    GW_RAY_MILLION_TURNS=200000 python -m tests.benchmarks.ray_million   # a slice
    GW_RAY_MILLION_STORAGE=local python -m tests.benchmarks.ray_million  # files on local disk

A benchmark, not a test (tens of minutes). The offline benchmark's template (40 realistic turns
from real SDK spans, 7 spans a line, so traces straddle lines and files) is replicated with fresh
trace ids into `FILES` gzip OTLP/JSON-lines files. By default they are uploaded as objects to the
tests' S3 server (moto's server mode on loopback, with its IAM checks: the reader's credentials
come from the environment, as a user's would) and read from `s3://traces/million/`; the workers
write the `.parquet` parts to `s3://results/million.parquet`. moto keeps objects in its memory,
which the gzipped archive (about 180 MB a million turns) fits. With `GW_RAY_MILLION_STORAGE=local`
the same files are read from local disk and written there. They are re-scored with the
deterministic evaluators (`quoted_spans`, `quote_verification` without embeddings) on the two-node
loopback cluster of the tests (`RayCluster`: two `ray start` nodes, one CPU each, 200 MB object
store each, spilling to disk beyond), 2 workers. The driver is its own process, as a user's would
be.

Measured: turns/s end to end (`summary.elapsed_s`), peak RSS of each node (the sum over the
node's processes, sampled every 0.5 s: raylet, GCS on the head, the workers; shared object-store
pages a process touched count in its RSS, so this over-counts rather than under-counts) and of
the driver (its `ru_maxrss`). Writes results/ray_million.{json,md}.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.benchmarks._timing import results_dir
from tests.benchmarks.bench_offline import _TRACE_ID, TEMPLATE_TURNS, _template

RESULTS = results_dir()
WORK = Path(__file__).parent / "_work" / "million"
TURNS = int(os.environ.get("GW_RAY_MILLION_TURNS", "1000000"))
STORAGE = os.environ.get("GW_RAY_MILLION_STORAGE", "s3")
FILES = 32
_PAGE = os.sysconf("SC_PAGE_SIZE")
_DRIVER = """
import json, resource, sys, time
from pathlib import Path
from groundwire.offline import rescore
address, out, answer, *files = sys.argv[1:]
spec = {"quoted_spans": {}, "quote_verification": {"embedder": None}}
summary = rescore(files, spec, out, engine="ray", workers=2, ray_address=address, chunk_size=64)
Path(answer).write_text(json.dumps({
    "turns": summary.turns_scored, "elapsed_s": summary.elapsed_s,
    "spans": summary.read.spans, "traces": summary.counts.traces,
    "driver_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "driver_cpu_s": time.process_time(),
}))
"""


def generate(folder: Path, turns: int) -> dict[str, Any]:
    """`turns` turns as FILES gzip files (whole template copies; a trace never crosses a
    copy, but crosses lines, and the last lines of a file's copy... stay in that file)."""
    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    lines = _template(folder)
    block = "\n".join(lines) + "\n"
    originals = sorted(set(_TRACE_ID.findall(block)))
    copies = max(1, turns // TEMPLATE_TURNS)
    per_file = -(-copies // FILES)
    raw = 0
    files: list[Path] = []
    for index in range(FILES):
        first, last = index * per_file, min(copies, (index + 1) * per_file)
        if first >= last:
            break
        path = folder / f"traces-{index:03d}.jsonl.gz"
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as file:
            for copy in range(first, last):
                text = block
                prefix = f"{copy:012x}"
                for old in originals:
                    text = text.replace(old, prefix + old[12:])
                file.write(text)
                raw += len(text)
        files.append(path)
    return {
        "files": [os.fspath(f) for f in files],
        "turns": copies * TEMPLATE_TURNS,
        "spans": copies * TEMPLATE_TURNS * 3,
        "raw_bytes": raw,
        "gzip_bytes": sum(f.stat().st_size for f in files),
        "generate_s": time.perf_counter() - started,
    }


class GroupRss:
    """Peak summed RSS of the processes of each process group (one per Ray node)."""

    def __init__(self, groups: dict[str, int]) -> None:
        self.groups = groups
        self.peak_mb = dict.fromkeys(groups, 0.0)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        totals = dict.fromkeys(self.groups, 0.0)
        by_group = {group: name for name, group in self.groups.items()}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                name = by_group.get(os.getpgid(int(entry)))
                if name is None:
                    continue
                with open(f"/proc/{entry}/statm", encoding="ascii") as file:
                    totals[name] += int(file.read().split()[1]) * _PAGE / 2**20
            except (OSError, ProcessLookupError):
                continue
        for name, total in totals.items():
            self.peak_mb[name] = max(self.peak_mb[name], total)

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._sample()

    def __enter__(self) -> GroupRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


class _Storage:
    """Where the archive lives and the parts go: local disk, or the S3 server's buckets."""

    def __init__(self, kind: str) -> None:
        if kind not in ("s3", "local"):
            sys.exit(f"GW_RAY_MILLION_STORAGE must be s3 or local, not {kind!r}")
        self.kind = kind
        self._server: Any = None
        self._context: Any = None

    def __enter__(self) -> _Storage:
        if self.kind == "s3":
            from tests.offline._s3_server import s3_reader

            self._context = s3_reader()  # the reader's AWS_* variables, before Ray starts
            self._server = self._context.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._context is not None:
            self._context.__exit__(*exc)

    def inputs(self, files: list[str]) -> list[str]:
        """The run's inputs: the files, or one prefix holding them as objects."""
        if self._server is None:
            return files
        for name in files:
            self._server.admin.upload_file(name, "traces", f"million/{Path(name).name}")
        return ["s3://traces/million/"]

    def out(self) -> str:
        """Where the workers write the parts."""
        if self._server is None:
            return os.fspath(WORK / "scores.parquet")
        return "s3://results/million.parquet"

    def parts(self) -> int:
        """How many parts the workers wrote."""
        if self._server is None:
            return len(list((WORK / "scores.parquet").iterdir()))
        pages = self._server.admin.get_paginator("list_objects_v2")
        found = pages.paginate(Bucket="results", Prefix="million.parquet/")
        return sum(len(page.get("Contents", ())) for page in found)


def main() -> None:
    """Generate, run, write results/ray_million.{json,md}; the files are removed at the end."""
    import shutil

    from tests.offline._ray_cluster import RayCluster

    load_at_start = os.getloadavg()[0]
    with _Storage(STORAGE) as storage:
        cluster = RayCluster()
        try:
            generated = generate(WORK / "traces", TURNS)
            shown = {k: v for k, v in generated.items() if k != "files"}
            print(f"generated: {shown}", flush=True)
            inputs = storage.inputs(generated["files"])
            cluster.start()
            groups = {name: node.pid for name, node in cluster.nodes.items()}
            answer = WORK / "answer.json"
            command = [sys.executable, "-c", _DRIVER, cluster.address]
            command += [storage.out(), os.fspath(answer), *inputs]
            started = time.perf_counter()
            with GroupRss(groups) as rss:
                subprocess.run(command, env=cluster.env, check=True, timeout=4 * 3600)
            wall = time.perf_counter() - started
            run = json.loads(answer.read_text(encoding="utf-8"))
            parts = storage.parts()
        finally:
            cluster.stop()
            shutil.rmtree(WORK, ignore_errors=True)
    del generated["files"]
    data = {
        "machine": {
            "cpus": os.cpu_count(),
            "load_average_1m_at_start": load_at_start,
            "load_average_1m_at_end": os.getloadavg()[0],
            "benchmark_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        },
        "storage": STORAGE,
        "generated": generated,
        "run": run,
        "wall_s_with_driver_start": wall,
        "turns_per_s": run["turns"] / run["elapsed_s"],
        "node_peak_rss_mb": rss.peak_mb,
        "output_parts": parts,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ray_million.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "ray_million.md").write_text(_markdown(data), encoding="utf-8")
    print(json.dumps(data, indent=2))


def _markdown(data: dict[str, Any]) -> str:
    """The results page."""
    g, run, machine = data["generated"], data["run"], data["machine"]
    rss = data["node_peak_rss_mb"]
    driver_us = run["driver_cpu_s"] / run["turns"] * 1e6
    s3 = data.get("storage") == "s3"
    where = "as objects in the tests' S3 server (moto, on loopback)" if s3 else "on local disk"
    out = "to the same S3 server" if s3 else "on local disk"
    return f"""# The million-turn run on the two-node loopback Ray cluster

{g["turns"]:,} turns ({g["spans"]:,} spans) in {FILES} gzip OTLP/JSON-lines files {where}:
{g["raw_bytes"] / 2**30:.2f} GB of JSON, {g["gzip_bytes"] / 2**20:.0f} MB gzipped. Re-scored with
`quoted_spans` + `quote_verification` (no embedder) on two `ray start` nodes on 127.0.0.1 (one CPU
each, 200 MB object store each), 2 workers, `.parquet` written by the workers
({data["output_parts"]} parts, {out}). Load average {machine["load_average_1m_at_start"]:.1f} at the
start, {machine["load_average_1m_at_end"]:.1f} at the end: a 2-core machine shared with other
engineers' jobs, so the figures are lower than the same cluster would give alone.

| figure | value |
|---|---|
| turns scored | {run["turns"]:,} |
| elapsed (the run's own) | {run["elapsed_s"]:,.0f} s |
| turns/s | {data["turns_per_s"]:,.0f} |
| peak RSS, head node (raylet, GCS, workers) | {rss["head"]:,.0f} MB |
| peak RSS, worker node (raylet, workers) | {rss["worker"]:,.0f} MB |
| peak RSS, driver | {run["driver_peak_rss_mb"]:,.0f} MB |
| driver CPU | {run["driver_cpu_s"]:,.0f} s ({driver_us:,.0f} µs/turn) |
"""


if __name__ == "__main__":
    main()
