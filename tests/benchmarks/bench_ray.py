"""The Ray engine's cost per turn against the local engine's, where it goes, and its scaling.

The offline benchmark's generated OTLP/JSON file (`bench_offline._generate`, ~250 MB), cut into
8 rotated parts, a quarter of it re-scored (about 14,000 turns) with the deterministic
evaluators (`quoted_spans`, `quote_verification` without embeddings):

1. Cost: the local engine (1 worker) and Ray (1 worker, a local instance with 2 CPUs), runs
   interleaved (local, Ray, local, Ray, ...) after the same warm-up, into `.jsonl` (on Ray the
   workers encode the lines, the driver appends their bytes) and into `.parquet` (on Ray the
   workers write the parts themselves): CPU
   per turn of the whole process tree (`TreeCpu`: the driver, Ray's raylet, GCS, workers and
   tasks), so the other engineers' jobs on this shared machine are not counted. Rows identical.
2. Stages: each stage of the Ray path run in this process on the same files, its CPU per turn
   (`_ray_stage_costs`). What Ray's run costs beyond their sum is Ray's own work (scheduling,
   Arrow blocks, the object store, idle workers).
3. Scaling: a two-node loopback cluster (`tests/offline/_ray_cluster.py`, one CPU a node), Ray
   with 1 and 2 workers on the 8 parts, interleaved, `.parquet` output written by the workers;
   each run cut into its phases (Ray's task timeline) with the CPU of each kind of process
   (/proc), and the best two workers can do on two cores from those figures (`_ray_timeline`).
4. The machine's two cores: the local engine's run (1 worker) on the same parts alone, then two
   of them at once (`_two_cores`), the same number of rounds after the same warm-up: what two
   CPU-bound processes of this work get from this machine, the ceiling for two Ray workers.

Run: `python -m tests.benchmarks ray`. Writes results/ray.{md,json}.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from groundwire.offline import rescore
from tests.benchmarks._cpu import TreeCpu
from tests.benchmarks._ray_stage_costs import stage_costs
from tests.benchmarks._ray_timeline import ProcessCpu, bound, phases
from tests.benchmarks._ray_timeline import markdown as timeline_markdown
from tests.benchmarks._timing import machine, results_dir, scaled
from tests.benchmarks._two_cores import two_cores
from tests.benchmarks.bench_offline import (
    ENGINE_FRACTION,
    FAST,
    ROTATED_PARTS,
    _generate,
    _rotate,
    _stats,
)

RESULTS = results_dir()
WORK = Path(__file__).parent / "_work" / "ray"
RUNS = scaled(3, 1)
CHUNK = 64


def _rows(path: Path) -> list[Any]:
    """An output's rows, sorted by turn (a `.jsonl` file, or a Parquet file or parts folder)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path).to_pylist()
        return sorted(table, key=lambda row: (row["trace_id"], row["span_id"]))
    lines = path.read_text(encoding="utf-8").splitlines()
    return sorted(lines)


def _measure(files: list[Path], out: Path, options: dict[str, Any]) -> dict[str, float]:
    """One run: turns/s and the process tree's CPU µs per turn."""
    start_unix, start_mono = time.time(), time.monotonic()
    with TreeCpu() as tree:
        summary = rescore(files, FAST, out, chunk_size=CHUNK, **options)
    return {
        "start_unix": start_unix,
        "start_mono": start_mono,
        "wall": time.monotonic() - start_mono,
        "turns": summary.turns_scored,
        "turns_per_s": summary.turns_scored / summary.elapsed_s,
        "tree_cpu_us_per_turn": tree.seconds / summary.turns_scored * 1e6,
    }


def _interleaved(
    files: list[Path], folder: Path, configs: dict[str, dict[str, Any]], suffix: str
) -> dict[str, Any]:
    """Each config warmed up once on one part, then RUNS rounds of every config in turn."""
    for name, options in configs.items():
        rescore(files[:1], FAST, folder / f"warm-{name}{suffix}", chunk_size=CHUNK, **options)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
    for _ in range(RUNS):
        for name, options in configs.items():
            out = folder / f"{name}{suffix}"
            runs[name].append(_measure(files, out, options))
            print(f"{name}{suffix}: {runs[name][-1]}", flush=True)
    rows: dict[str, Any] = {}
    outputs = [_rows(folder / f"{name}{suffix}") for name in configs]
    for name, measured in runs.items():
        rows[name] = {
            "runs": measured,
            "turns": measured[0]["turns"],
            "turns_per_s": _stats([m["turns_per_s"] for m in measured]),
            "tree_cpu_us_per_turn": _stats([m["tree_cpu_us_per_turn"] for m in measured]),
        }
    rows["identical_rows"] = all(rows_ == outputs[0] for rows_ in outputs)
    return rows


def _cost(files: list[Path], folder: Path) -> dict[str, Any]:
    """Local 1 worker against Ray 1 worker, `.jsonl` and `.parquet` outputs."""
    import ray

    from tests.offline._ray_local import local_ray

    configs = {"local": {"engine": "local", "workers": 1}, "ray": {"engine": "ray", "workers": 1}}
    with local_ray(ray, num_cpus=2):
        rows = {
            suffix[1:]: _interleaved(files, folder, configs, suffix)
            for suffix in (".jsonl", ".parquet")
        }
    for kind in ("jsonl", "parquet"):
        rows[kind].update(cpu_ratio(rows[kind]))
    return rows


def cpu_ratio(rows: dict[str, Any]) -> dict[str, Any]:
    """Ray's CPU per turn over the local engine's, round by round (each Ray run against the
    local run just before it, so a slow spell of the shared machine hits both sides of a pair),
    and the median of those rounds: one slow run moves a ratio of medians more than this."""
    pairs = zip(rows["local"]["runs"], rows["ray"]["runs"], strict=True)
    rounds = [ray["tree_cpu_us_per_turn"] / local["tree_cpu_us_per_turn"] for local, ray in pairs]
    ordered = sorted(rounds)
    return {"ray_cpu_over_local": ordered[(len(ordered) - 1) // 2], "ratio_rounds": rounds}


def _scaling(files: list[Path], folder: Path) -> dict[str, Any]:
    """Ray 1 and 2 workers on the two-node loopback cluster, interleaved, `.parquet` out.

    The driver runs in its own process with the cluster's environment (its token), as a user's
    would; turns/s is the figure (the nodes are not below that process, so its CPU is the
    driver's only).
    """
    from tests.offline._ray_cluster import RayCluster

    cluster = RayCluster()
    answer = folder / "scaling.json"
    try:
        cluster.start()
        command = [sys.executable, "-m", "tests.benchmarks.bench_ray", "--scaling"]
        nodes = {name: node.pid for name, node in cluster.nodes.items()}
        with ProcessCpu(nodes) as cpu:
            driver = subprocess.Popen(
                [*command, cluster.address, os.fspath(answer), *map(os.fspath, files)],
                env=cluster.env,
            )
            cpu.driver = driver.pid
            if driver.wait(timeout=3600) != 0:
                raise RuntimeError(f"the scaling driver failed ({driver.returncode})")
    finally:
        cluster.stop()
    rows: dict[str, Any] = json.loads(answer.read_text(encoding="utf-8"))
    timeline = json.loads((folder / "timeline.json").read_text(encoding="utf-8"))
    one = rows["ray_1"]["turns_per_s"]["median"]
    rows["speedup_2_over_1"] = rows["ray_2"]["turns_per_s"]["median"] / one
    for n in (1, 2):
        rows[f"ray_{n}"]["phases"] = [phases(r, timeline, cpu) for r in rows[f"ray_{n}"]["runs"]]
    rows["rounds"] = [
        bound(a, b) for a, b in zip(rows["ray_1"]["phases"], rows["ray_2"]["phases"], strict=True)
    ]
    return rows


def _machine_two_cores(files: list[Path], folder: Path) -> dict[str, Any]:
    """The local engine's run on `files` (1 worker, `.parquet` out) alone and twice at once."""
    command = [sys.executable, "-m", "tests.benchmarks.bench_ray", "--local-run"]
    return two_cores([*command, os.fspath(folder / "local-run"), *map(os.fspath, files)], RUNS)


def _local_run(out: Path, files: list[Path]) -> None:
    """In a process of its own (`_machine_two_cores`): one local run, its output made unique."""
    target = out.with_name(f"{out.name}-{os.getpid()}.parquet")
    rescore(files, FAST, target, chunk_size=CHUNK, engine="local", workers=1)
    target.unlink()


def _scaling_driver(address: str, answer: Path, files: list[Path]) -> None:
    """In the driver process: connect to the cluster, run the interleaved rounds, write JSON."""
    import ray

    ray.init(address=address, logging_level="ERROR", log_to_driver=False)
    try:
        configs = {f"ray_{n}": {"engine": "ray", "workers": n} for n in (1, 2)}
        rows = _interleaved(files, answer.parent, configs, ".parquet")
        timeline = ray.timeline()
    finally:
        ray.shutdown()
    (answer.parent / "timeline.json").write_text(json.dumps(timeline), encoding="utf-8")
    answer.write_text(json.dumps(rows), encoding="utf-8")


def main() -> None:
    """Run the three parts and write results/ray.{md,json}."""
    load_at_start = os.getloadavg()[0]
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / "traces.jsonl"
    try:
        generated = _generate(path)
        files = _rotate(path, WORK / "parts", ROTATED_PARTS, ENGINE_FRACTION)
        path.unlink()
        stages = stage_costs(files, FAST, CHUNK)
        print(f"stages: {stages}", flush=True)
        cost = _cost(files, WORK)
        scaling = _scaling(files, WORK)
        scaling["two_cores"] = _machine_two_cores(files, WORK)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    data = {
        "machine": machine(load_at_start),
        "file": generated,
        "parts": ROTATED_PARTS,
        "fraction": ENGINE_FRACTION,
        "runs": RUNS,
        "stages": stages,
        "cost": cost,
        "scaling": scaling,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ray.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "ray.md").write_text(_markdown(data), encoding="utf-8")


def _jsonl_words(cost: dict[str, Any], stages: dict[str, Any]) -> list[str]:
    """The `.jsonl` run against its stages, and the driver's two designs compared."""
    if "driver_copy_encoded_jsonl_us_per_turn" not in stages:
        return []
    ray_row = cost["jsonl"]["ray"]["tree_cpu_us_per_turn"]["median"]
    keys = ("read_us_per_turn", "group_sort_us_per_turn", "assemble_us_per_turn")
    ours = sum(stages[key] for key in keys) + stages["score_and_encode_lines_us_per_turn"]
    ours += stages["driver_copy_encoded_jsonl_us_per_turn"]
    copy = stages["driver_copy_encoded_jsonl_us_per_turn"]
    join = stages["driver_join_part_files_jsonl_us_per_turn"]
    decode = stages["driver_decode_and_write_jsonl_us_per_turn"]
    return [
        f"Ray's .jsonl run costs {ray_row:,.0f} µs a turn; our stages in it add up to "
        f"{ours:,.0f} (the driver's share {copy:,.1f}: it appends each block's lines as the "
        f"workers encoded them). Joining the same lines from part files the workers wrote costs "
        f"the driver {join:,.1f} µs a turn (plus a file per block on the workers' side and a "
        f"file system every node shares); decoding every row to write it, what an OTLP export or "
        f"a results hook still needs, {decode:,.0f}. Encoded lines byte for byte the decoded "
        f"ones: {stages['encoded_equals_decoded']}.",
        "",
    ]


def _two_cores_words(scaling: dict[str, Any]) -> list[str]:
    """What the machine gives two processes of this work, and Ray's two workers against it."""
    cores = scaling.get("two_cores")
    if cores is None:
        return []
    ceiling = cores["two_over_one"]
    return [
        "What this machine's two cores give the same work: the local engine's run (1 worker, "
        "the same 8 parts, `.parquet`) alone, then two of them at once, "
        f"{len(cores['rounds'])} rounds after a warm-up: two processes **{ceiling:.2f}x** one "
        "(rounds: "
        + ", ".join(f"{r['two_over_one']:.2f}x" for r in cores["rounds"])
        + f"); each of the two spends {cores['cpu_inflation']:.2f}x the CPU of the one alone for "
        "the same work (a second core as fast as the first, with nothing shared, would give "
        "2.00x and 1.00x; above 2.00x, or under 1.00x, the machine's own speed moved between "
        "the runs more than the pair lost by sharing it). "
        f"Ray's two workers reach **{scaling['speedup_2_over_1'] / ceiling:.0%}** of that "
        "ceiling.",
        "",
    ]


def _markdown(data: dict[str, Any]) -> str:
    """The results page."""
    cost, stages, scaling = data["cost"], data["stages"], data["scaling"]

    def cell(row: dict[str, Any], key: str, fmt: str = ",.0f") -> str:
        stat = row[key]
        return f"{stat['median']:{fmt}} ({stat['min']:{fmt}}-{stat['max']:{fmt}})"

    lines = [
        "# Ray engine: cost per turn, where it goes, scaling",
        "",
        f"{cost['jsonl']['local']['turns']:,} turns (a quarter of the "
        f"{data['file']['bytes'] / 2**20:.0f} MB generated file) in {data['parts']} rotated "
        f"parts; `quoted_spans` + `quote_verification` without embeddings; median (min-max) of "
        f"{data['runs']} interleaved runs after the same warm-up. Load average "
        f"{data['machine']['load_average_1m_at_start']:.1f} at the start, "
        f"{data['machine']['load_average_1m_at_end']:.1f} at the end (a machine of "
        f"{data['machine']['cpus']} cores shared with other engineers' jobs).",
        "",
        "## Cost: CPU per turn of the whole process tree",
        "",
        "| output | engine | turns/s | CPU µs/turn |",
        "|---|---|---|---|",
    ]
    for kind in ("jsonl", "parquet"):
        for name in ("local", "ray"):
            row = cost[kind][name]
            lines.append(
                f"| .{kind} | {name}, 1 worker | {cell(row, 'turns_per_s')} | "
                f"{cell(row, 'tree_cpu_us_per_turn')} |"
            )
    lines += [
        "",
        f"Ray over local, CPU per turn: **{cost['jsonl']['ray_cpu_over_local']:.2f}x** into "
        ".jsonl (the workers encode the lines, the driver appends their bytes), "
        f"**{cost['parquet']['ray_cpu_over_local']:.2f}x** into .parquet (the workers write the "
        "parts; the driver gets counters); medians of the rounds' ratios (each Ray run over "
        "the local run just before it: "
        + ", ".join(f"{r:.2f}x" for r in cost["jsonl"].get("ratio_rounds", []))
        + " and "
        + ", ".join(f"{r:.2f}x" for r in cost["parquet"].get("ratio_rounds", []))
        + "). Target 1.2x. "
        f"Rows identical: {cost['jsonl']['identical_rows'] and cost['parquet']['identical_rows']}.",
        "",
        "## Where Ray's CPU goes: each stage in one process, µs per turn",
        "",
        "| stage | µs/turn |",
        "|---|---|",
    ]
    for key, label in (
        ("read_us_per_turn", "read (`read_ranges`: parse, fragments, pickle, cut into ranges)"),
        ("group_sort_us_per_turn", "group (sort each range's fragments by key)"),
        ("assemble_us_per_turn", "assemble (`assemble_blocks`: turns, JSON encode)"),
        ("score_us_per_turn", "score (`score_batch`: parse turns, score, encode scores)"),
        ("score_and_write_part_us_per_turn", "score and write the part (workers write)"),
        ("score_and_encode_lines_us_per_turn", "score and encode the .jsonl lines (workers)"),
        ("driver_copy_encoded_jsonl_us_per_turn", "driver: append the encoded lines (.jsonl)"),
        ("driver_join_part_files_jsonl_us_per_turn", "driver: join the lines from part files"),
        ("driver_decode_and_write_jsonl_us_per_turn", "driver: decode rows, write .jsonl"),
    ):
        if key in stages:
            lines.append(f"| {label} | {stages[key]:,.1f} |")
    ray_row = cost["parquet"]["ray"]["tree_cpu_us_per_turn"]["median"]
    ours = sum(
        stages[key]
        for key in (
            "read_us_per_turn",
            "group_sort_us_per_turn",
            "assemble_us_per_turn",
            "score_and_write_part_us_per_turn",
        )
    )
    lines += [
        "",
        f"Ray's .parquet run costs {ray_row:,.0f} µs a turn; our stages in it add up to "
        f"{ours:,.0f}: the other {ray_row - ours:,.0f} µs ({(ray_row - ours) / ray_row:.0%}) "
        "are Ray's own (task scheduling, Arrow blocks and the object store, worker processes "
        "idling).",
        "",
        *_jsonl_words(cost, stages),
        "## Scaling: the two-node loopback cluster (one CPU a node), .parquet by the workers",
        "",
        "| workers | turns/s | driver CPU µs/turn |",
        "|---|---|---|",
    ]
    for n in (1, 2):
        row = scaling[f"ray_{n}"]
        lines.append(f"| {n} | {cell(row, 'turns_per_s')} | {cell(row, 'tree_cpu_us_per_turn')} |")
    lines += [
        "",
        f"Two workers: **{scaling['speedup_2_over_1']:.2f}x** one (target 1.5x). Rows identical: "
        f"{scaling['identical_rows']}. Round by round (1 then 2 workers, interleaved): "
        + ", ".join(f"{r['measured_speedup']:.2f}x" for r in scaling.get("rounds", []))
        + ".",
        "",
        *_two_cores_words(scaling),
        *(timeline_markdown(scaling) if "rounds" in scaling else []),
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--scaling"]:
        _scaling_driver(sys.argv[2], Path(sys.argv[3]), [Path(p) for p in sys.argv[4:]])
    elif sys.argv[1:2] == ["--local-run"]:
        _local_run(Path(sys.argv[2]), [Path(p) for p in sys.argv[3:]])
    else:
        main()
