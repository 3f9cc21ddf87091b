"""Offline re-scoring: read throughput, scoring throughput, flat memory, and the workers speed-up.

A ~250 MB OTLP/JSON-lines file (the issue asks for 1 GB-scale; this 2-core machine shared with
other jobs gets a quarter of that, which is enough to show whether memory grows) is generated
under `tests/benchmarks/_work/` from real SDK spans exported by groundwire's exporter, 7 spans a
line so that most traces are split across lines, then replicated with fresh trace ids. It is
deleted at the end.

1. Reading: every span read, traces reassembled and turns assembled (no scoring), in spans/s;
   against the peer, protobuf's own `json_format.Parse` into `ExportTraceServiceRequest` (parsing
   only, no turns) on the first eighth of the file. RSS is sampled at each quarter of the file.
2. End to end, the whole file: `rescore` with `quoted_spans` into a .jsonl, RSS at each quarter.
3. Scoring: `rescore` with the deterministic evaluators (`quoted_spans`, `quote_verification`
   without embeddings) on a slice of the file with 1 and 2 worker processes (speed-up), against
   the peer `groundwire.evaluate_many` on the same turns already in memory; and the speed-up
   with a CPU-heavy evaluator (`quote_verification` with its default embedder on every quote)
   on a few turns.

Run: `python -m tests.benchmarks offline`. Writes results/offline.{md,json}. `python -m
tests.benchmarks.bench_offline read` measures part 1 alone (merged into the results files);
`python -m tests.benchmarks.bench_offline compare REV` adds the read stages of revision REV
against this tree, measured alike (`_read_compare`).
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import time
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from groundwire import evaluate_many
from groundwire.offline import Problems, TurnCounts, WindowOptions, iter_turns, rescore
from groundwire.offline._pipeline import DEFAULT_WINDOW
from tests.benchmarks._cpu import TreeCpu
from tests.benchmarks._timing import machine, results_dir, scaled
from tests.offline._traces import write_groundwire_jsonl

RESULTS = results_dir()
WORK = Path(__file__).parent / "_work"
TARGET_BYTES = int(os.environ.get("GW_BENCH_OFFLINE_MB", str(scaled(250, 2)))) * 1024 * 1024
"""Size of the generated file (GW_BENCH_OFFLINE_MB shrinks it for a quick trial run)."""
TEMPLATE_TURNS = 40
SLICE_LINES = scaled(6_000, 200)
HEAVY_TURNS = scaled(120, 24)
"""Turns of the CPU-heavy slice: generated with distinct texts (`_template(distinct=True)`),
since the process-wide embedding cache makes a repeated text free."""
"""About 140 turns: a run of several seconds, so worker start-up (model load) does not dominate."""
HEAVY = {"quote_verification": {"cosine": "always"}}
"""quote_verification with its default sentence embedder on every quote: CPU-heavy per turn.
(With the default `cosine="fuzzy"` the generated quotes, all verbatim, would embed nothing.)"""
FAST = {"quoted_spans": {}, "quote_verification": {"embedder": None}}
_TRACE_ID = re.compile(r'"traceId":"([0-9a-f]{32})"')
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss_mb() -> float:
    with open("/proc/self/statm", encoding="ascii") as file:
        return int(file.read().split()[1]) * _PAGE / 2**20


def _template(folder: Path, turns: int = TEMPLATE_TURNS, *, distinct: bool = False) -> list[str]:
    """OTLP/JSON lines of `turns` realistic turns, 7 spans a line (traces split). `distinct`:
    each turn's first quote names its own tower (in the quote and in its documents), so the
    texts an embedder sees differ from turn to turn, as in real traces."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    filler = (
        "The committee reviewed the quarterly figures and noted that revenue grew in every "
        "region, while costs for shipping and storage rose more slowly than expected. "
    )
    for index in range(turns):
        tower = f"The tower {index}" if distinct else "The tower"
        docs = [
            f"Document {d} for turn {index}. {filler * 3}{tower} is 330 metres tall. {filler}"
            for d in range(4)
        ]
        quote = f"{tower} is 330 metres tall" if index % 3 else f"{tower} is 500 metres wide"
        answer = f'According to the report, "{quote}" and "revenue grew in every region".'
        query = f"What do the documents say about the tower? ({index})"
        with tracer.start_as_current_span(
            "rag",
            attributes={
                "openinference.span.kind": "CHAIN",
                "input.value": query,
                "output.value": answer,
            },
        ):
            flat = {f"retrieval.documents.{i}.document.content": d for i, d in enumerate(docs)}
            with tracer.start_as_current_span(
                "retrieve",
                attributes={"openinference.span.kind": "RETRIEVER", "input.value": query, **flat},
            ):
                pass
            with tracer.start_as_current_span(
                "llm", attributes={"openinference.span.kind": "LLM", "output.value": answer}
            ):
                pass
    provider.shutdown()
    path = write_groundwire_jsonl(exporter.get_finished_spans(), folder / "template.jsonl", 7)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.unlink()
    return lines


def _generate(path: Path, target: int = TARGET_BYTES) -> dict[str, Any]:
    """Replicate the template with fresh trace ids until the file reaches `target` bytes."""
    started = time.perf_counter()
    lines = _template(path.parent)
    block = "\n".join(lines) + "\n"
    originals = sorted(set(_TRACE_ID.findall(block)))
    copies = 0
    with path.open("w", encoding="utf-8") as file:
        while file.tell() < target:
            prefix = f"{copies:012x}"
            text = block
            for old in originals:
                text = text.replace(old, prefix + old[12:])
            file.write(text)
            copies += 1
    return {
        "bytes": path.stat().st_size,
        "lines": copies * len(lines),
        "turns": copies * TEMPLATE_TURNS,
        "spans": copies * TEMPLATE_TURNS * 3,
        "generate_s": time.perf_counter() - started,
    }


NO_DUPLICATE_MEMORY = WindowOptions(remember_spans=0, remember_turns=0)
"""The reading window without the memory of recent span and turn ids (duplicate detection)."""


def _read_only(path: Path, window: WindowOptions = DEFAULT_WINDOW) -> dict[str, Any]:
    """Stream every turn out of the file; RSS at each quarter of the bytes."""
    problems = Problems()
    counts = TurnCounts()
    size = path.stat().st_size
    marks: list[float] = []
    quarter = 1
    started, cpu = time.perf_counter(), time.process_time()
    for _ in iter_turns([path], problems, counts, window=window):
        if problems.stats.bytes_read >= size * quarter / 4 and quarter <= 4:
            marks.append(round(_rss_mb(), 1))
            quarter += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    marks.append(round(_rss_mb(), 1))
    return {
        "seconds": elapsed,
        "spans": problems.stats.spans,
        "turns": counts.turns,
        "spans_per_s": problems.stats.spans / elapsed,
        "spans_per_cpu_s": problems.stats.spans / cpu,
        "turns_per_s": counts.turns / elapsed,
        "mb_per_s": size / 2**20 / elapsed,
        "rss_mb_at_quarters": marks,
        "peak_held_spans": counts.peak_held_spans,
        "forced_traces": counts.forced_traces,
    }


def _peer_parse(path: Path, max_lines: int) -> dict[str, Any]:
    """protobuf json_format.Parse of OTLP/JSON lines (hex ids converted to base64 first)."""
    from groundwire.exporters import from_otlp_json

    spans = 0
    started, cpu = time.perf_counter(), time.process_time()
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file):
            if number >= max_lines:
                break
            message = from_otlp_json(line, ExportTraceServiceRequest())
            spans += sum(len(s.spans) for r in message.resource_spans for s in r.scope_spans)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    _ = json_format  # the peer is protobuf's JSON mapping, reached through from_otlp_json
    return {
        "seconds": elapsed,
        "spans": spans,
        "spans_per_s": spans / elapsed,
        "spans_per_cpu_s": spans / cpu,
    }


def _read_stages(path: Path, max_lines: int) -> dict[str, Any]:
    """CPU µs per span of each stage of the read path, on the peer's slice of the file: parsing
    (readers alone), + intake and window reassembly (duplicate-id memory, trace release), +
    assembly (turns out, the full read path). Each stage is the difference of two runs."""
    from groundwire.offline import read_spans

    sliced = _slice(path, path.with_name("stages.jsonl"), max_lines)

    def parse() -> int:
        problems = Problems()
        for _ in read_spans([sliced], problems):
            pass
        return problems.stats.spans

    def window() -> int:
        from groundwire.offline._pipeline import _Intake, split_evaluations
        from groundwire.offline._window import TraceWindow

        problems, traces = Problems(), TraceWindow()
        intake = _Intake(TurnCounts(), DEFAULT_WINDOW, None, ())
        for batch in read_spans([sliced], problems):
            for _ in traces.add(split_evaluations(intake.spans(batch))[0]):
                pass
        for _ in traces.flush():
            pass
        return problems.stats.spans

    def full() -> int:
        problems = Problems()
        for _ in iter_turns([sliced], problems, TurnCounts()):
            pass
        return problems.stats.spans

    cpu: dict[str, float] = {}
    for name, step in (("parse", parse), ("window", window), ("full", full)):
        step()  # warm-up
        runs = []
        for _ in range(3):
            started = time.process_time()
            spans = step()
            runs.append((time.process_time() - started) / spans * 1e6)
        cpu[name] = sorted(runs)[1]
    sliced.unlink()
    return {
        "spans": spans,
        "parse_us_per_span": cpu["parse"],
        "window_us_per_span": cpu["window"] - cpu["parse"],
        "assembly_us_per_span": cpu["full"] - cpu["window"],
        "full_us_per_span": cpu["full"],
    }


def _end_to_end(path: Path, out: Path) -> dict[str, Any]:
    """The whole file through rescore (quoted_spans) into .jsonl; RSS at each quarter."""
    marks: list[float] = []

    def hook(summary: Any) -> None:
        if summary.read.bytes_read >= summary.total_bytes * (len(marks) + 1) / 4:
            marks.append(round(_rss_mb(), 1))

    summary = rescore(path, ["quoted_spans"], out, progress=hook, chunk_size=256)
    marks.append(round(_rss_mb(), 1))
    out.unlink()
    return {
        "seconds": summary.elapsed_s,
        "turns": summary.turns_scored,
        "turns_per_s": summary.turns_scored / summary.elapsed_s,
        "spans_per_s": summary.read.spans / summary.elapsed_s,
        "rss_mb_at_quarters": marks,
    }


def _slice(path: Path, target: Path, lines: int) -> Path:
    with path.open(encoding="utf-8") as source, target.open("w", encoding="utf-8") as out:
        for number, line in enumerate(source):
            if number >= lines:
                break
            out.write(line)
    return target


def _scoring(slice_path: Path) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for workers in (1, 2):
        out = slice_path.with_suffix(f".w{workers}.jsonl")
        summary = rescore(slice_path, FAST, out, workers=workers, chunk_size=64)
        rows[f"workers_{workers}"] = {
            "seconds": summary.elapsed_s,
            "turns": summary.turns_scored,
            "turns_per_s": summary.turns_scored / summary.elapsed_s,
        }
    same = (slice_path.with_suffix(".w1.jsonl").read_bytes()) == (
        slice_path.with_suffix(".w2.jsonl").read_bytes()
    )
    turns = list(iter_turns([slice_path], Problems(), TurnCounts()))
    started = time.perf_counter()
    evaluate_many(turns, FAST)
    peer = time.perf_counter() - started
    rows["peer_evaluate_many"] = {
        "seconds": peer,
        "turns": len(turns),
        "turns_per_s": len(turns) / peer,
    }
    rows["workers_2_identical_output"] = same
    heavy_path = slice_path.with_name("heavy.jsonl")
    heavy_lines = _template(slice_path.parent, HEAVY_TURNS, distinct=True)
    heavy_path.write_text("\n".join(heavy_lines) + "\n", encoding="utf-8")
    for workers in (1, 2):
        out = heavy_path.with_suffix(f".w{workers}.jsonl")
        summary = rescore(heavy_path, HEAVY, out, workers=workers, chunk_size=4)
        rows[f"heavy_workers_{workers}"] = {
            "seconds": summary.elapsed_s,
            "turns": summary.turns_scored,
            "turns_per_s": summary.turns_scored / summary.elapsed_s,
        }
    rows["heavy_speedup_2_over_1"] = (
        rows["heavy_workers_2"]["turns_per_s"] / rows["heavy_workers_1"]["turns_per_s"]
    )
    rows["speedup_2_over_1"] = rows["workers_2"]["turns_per_s"] / rows["workers_1"]["turns_per_s"]
    return rows


ROTATED_PARTS = 8
"""The file is cut into this many rotated parts (at line boundaries, traces straddling them)."""
ENGINE_FRACTION = 4
"""The engine comparison runs on the first 1/ENGINE_FRACTION of the file (N runs each)."""
RUNS = scaled(3, 1)
GROUPING_RUNS = 1
"""Runs of the grouping-cost steps over the whole file (each takes tens of seconds here)."""
ENGINE_CONFIGS = (("local", 1), ("local", 2), ("ray", 1), ("ray", 2))


def _rotate(path: Path, folder: Path, parts: int, fraction: int = 1) -> list[Path]:
    """The first 1/fraction of the file cut into `parts` files of about equal size, as the
    Collector's file exporter rotates (at line boundaries: traces straddle the cuts)."""
    folder.mkdir(parents=True, exist_ok=True)
    limit = path.stat().st_size // fraction
    step = limit // parts + 1
    files: list[Path] = []
    out = None
    written = 0
    with path.open("rb") as source:
        for line in source:
            if written >= limit:
                break
            if out is None or out.tell() >= step:
                if out is not None:
                    out.close()
                files.append(folder / f"traces-{len(files):03d}.jsonl")
                out = files[-1].open("wb")
            out.write(line)
            written += len(line)
    if out is not None:
        out.close()
    return files


_TICKS = os.sysconf("SC_CLK_TCK")


def _busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (every process, every core) since boot."""
    with open("/proc/stat", encoding="ascii") as file:
        fields = [int(x) for x in file.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields[:8]) - idle) / _TICKS


def _own_cpu_s() -> float:
    """CPU seconds of this process (all its threads): the parent's share of a run."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _stats(values: list[float]) -> dict[str, float]:
    """Median, min and max of N measurements."""
    ordered = sorted(values)
    return {"median": ordered[len(ordered) // 2], "min": ordered[0], "max": ordered[-1]}


def _grouping_cost(files: list[Path]) -> dict[str, Any]:
    """Seconds to read the parts alone, to read + window-assemble, and to read + group whole."""
    from groundwire.offline import read_spans

    def read_alone() -> int:
        problems = Problems()
        for _ in read_spans(files, problems):
            pass
        return problems.stats.spans

    def window() -> int:
        counts = TurnCounts()
        return sum(1 for _ in iter_turns(files, Problems(), counts))

    def whole() -> int:
        counts = TurnCounts()
        return sum(1 for _ in iter_turns(files, Problems(), counts, whole=True))

    rows: dict[str, Any] = {}
    for name, step in (("read_alone", read_alone), ("window", window), ("whole", whole)):
        seconds: list[float] = []
        for _ in range(GROUPING_RUNS):
            started = time.perf_counter()
            count = step()
            seconds.append(time.perf_counter() - started)
        rows[name] = {"seconds": _stats(seconds), "count": count}
    base = rows["read_alone"]["seconds"]["median"]
    rows["window_over_read"] = rows["window"]["seconds"]["median"] / base
    rows["whole_over_read"] = rows["whole"]["seconds"]["median"] / base
    return rows


def _engine_run(files: list[Path], out: Path, options: dict[str, Any]) -> dict[str, float]:
    """One engine run: turns/s and CPU µs per turn (machine, our process tree, this process)."""
    busy, mine = _busy_cpu_s(), _own_cpu_s()
    with TreeCpu() as ours:
        summary = rescore(files, FAST, out, **options)
    turns = summary.turns_scored
    return {
        "turns": turns,
        "turns_per_s": turns / summary.elapsed_s,
        "machine_cpu_us_per_turn": (_busy_cpu_s() - busy) / turns * 1e6,
        "tree_cpu_us_per_turn": ours.seconds / turns * 1e6,
        "parent_cpu_us_per_turn": (_own_cpu_s() - mine) / turns * 1e6,
    }


def _engines(files: list[Path], folder: Path) -> dict[str, Any]:
    """FAST evaluators over the rotated parts: local 1 and 2 workers, Ray 1 and 2 workers, in
    interleaved rounds after the same warm-up."""
    import ray

    from tests.offline._ray_local import local_ray

    rows: dict[str, Any] = {}
    outputs: dict[str, bytes] = {}
    configs = {
        f"{engine}_{workers}": {"engine": engine, "workers": workers, "chunk_size": 64}
        for engine, workers in ENGINE_CONFIGS
    }
    measured: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
    with local_ray(ray, num_cpus=2):
        for options in configs.values():  # the same warm-up for every configuration
            rescore(files[:1], FAST, folder / "warm.jsonl", **options)
        for _ in range(RUNS):  # interleaved rounds: a change of load hits every configuration
            for name, options in configs.items():
                out = folder / f"{name}.jsonl"
                measured[name].append(_engine_run(files, out, options))
                outputs[name] = out.read_bytes()
    for name, runs in measured.items():
        rows[name] = {
            "turns": runs[0]["turns"],
            **{key: _stats([run[key] for run in runs]) for key in runs[0] if key != "turns"},
        }
        print(f"{name}: {rows[name]['turns_per_s']['median']:.0f} turns/s", flush=True)
    for engine in ("local", "ray"):
        one = rows[f"{engine}_1"]["turns_per_s"]["median"]
        two = rows[f"{engine}_2"]["turns_per_s"]["median"]
        rows[f"{engine}_speedup"] = two / one
        rows[f"{engine}_efficiency_added_core"] = (two - one) / one
        cpu_one = rows[f"{engine}_1"]["machine_cpu_us_per_turn"]["median"]
        cpu_two = rows[f"{engine}_2"]["machine_cpu_us_per_turn"]["median"]
        # Two cores at most do 2 s of CPU a second: 2e6 / cpu_two turns/s, whatever the schedule.
        rows[f"{engine}_cpu_added_by_second_worker"] = cpu_two / cpu_one - 1
        rows[f"{engine}_speedup_cap_2_cores"] = 2e6 / cpu_two / one
    tree_cpu = {name: rows[name]["tree_cpu_us_per_turn"]["median"] for name in ("local_1", "ray_1")}
    rows["ray_cpu_over_local"] = tree_cpu["ray_1"] / tree_cpu["local_1"]
    rows["identical_outputs"] = len(set(outputs.values())) == 1
    return rows


def rotated() -> None:
    """Only the rotated-parts section; merged into an existing results/offline.json."""
    load_at_start = os.getloadavg()[0]
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / "traces.jsonl"
    try:
        generated = _generate(path)
        files = _rotate(path, WORK / "rotated", ROTATED_PARTS)
        sliced = _rotate(path, WORK / "engines", ROTATED_PARTS, ENGINE_FRACTION)
        path.unlink()
        grouping = _grouping_cost(files)
        print(f"whole grouping: {grouping['whole_over_read']:.2f}x reading alone", flush=True)
        engines = _engines(sliced, WORK)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    data = json.loads((RESULTS / "offline.json").read_text(encoding="utf-8"))
    data["rotated"] = {
        "file": generated,
        "parts": ROTATED_PARTS,
        "engine_fraction": ENGINE_FRACTION,
        "runs": RUNS,
        "grouping_runs": GROUPING_RUNS,
        "load_average_1m_at_start": load_at_start,
        "load_average_1m_at_end": os.getloadavg()[0],
        "grouping": grouping,
        "engines": engines,
    }
    (RESULTS / "offline.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "offline.md").write_text(_markdown(data), encoding="utf-8")


def compare(revision: str) -> None:
    """The read path's stages at `revision` against this tree (`_read_compare`), merged into
    results/offline.{md,json}."""
    from tests.benchmarks._read_compare import compare as measure_both

    measure_both(revision, RESULTS / "offline.json", _generate, TARGET_BYTES)
    data = json.loads((RESULTS / "offline.json").read_text(encoding="utf-8"))
    (RESULTS / "offline.md").write_text(_markdown(data), encoding="utf-8")


def _read_path(path: Path) -> dict[str, Any]:
    """Generate the file at `path`, then read it (without and with the duplicate-id memory),
    parse its first eighth with the peer and take the read stages apart."""
    generated = _generate(path)
    print(f"generated {generated['bytes'] / 2**20:.0f} MB in {generated['generate_s']:.0f} s")
    # First without the duplicate memory: RSS only grows, so this pass shows what reading
    # alone holds; the default pass after it adds the bounded memory of recent ids.
    reading_no_memory = _read_only(path, NO_DUPLICATE_MEMORY)
    reading = _read_only(path)
    print(f"read: {reading['spans_per_s']:.0f} spans/s")
    peer = _peer_parse(path, generated["lines"] // 8)
    print(f"peer parse: {peer['spans_per_s']:.0f} spans/s")
    stages = _read_stages(path, generated["lines"] // 8)
    print(f"read stages (µs/span): {stages}", flush=True)
    return {
        "file": generated,
        "read": reading,
        "read_without_duplicate_memory": reading_no_memory,
        "peer_protobuf_parse": peer,
        "read_stages": stages,
    }


def read_path() -> None:
    """The reading section alone (`python -m tests.benchmarks.bench_offline read`), merged into
    results/offline.{md,json}; the load it ran under is kept as `read_machine`."""
    load_at_start = os.getloadavg()[0]
    WORK.mkdir(parents=True, exist_ok=True)
    try:
        measured = _read_path(WORK / "traces.jsonl")
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    data = json.loads((RESULTS / "offline.json").read_text(encoding="utf-8"))
    data.update(measured, read_machine=machine(load_at_start))
    (RESULTS / "offline.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "offline.md").write_text(_markdown(data), encoding="utf-8")


def main() -> None:
    """Run every part and write results/offline.{md,json}."""
    load_at_start = os.getloadavg()[0]
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / "traces.jsonl"
    try:
        measured = _read_path(path)
        whole = _end_to_end(path, WORK / "whole.jsonl")
        print(f"end to end: {whole['turns_per_s']:.0f} turns/s")
        scoring = _scoring(_slice(path, WORK / "slice.jsonl", SLICE_LINES))
        print(f"scoring speed-up: {scoring['speedup_2_over_1']:.2f}")
        print(f"heavy speed-up: {scoring['heavy_speedup_2_over_1']:.2f}")
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    data = {
        "machine": machine(load_at_start),
        **measured,
        "end_to_end_quoted_spans": whole,
        "scoring_slice": scoring,
    }
    previous = RESULTS / "offline.json"
    if previous.exists():
        earlier = json.loads(previous.read_text(encoding="utf-8"))
        for section in ("read_stages_compared", "rotated"):  # written by their own commands
            if earlier.get(section) is not None:
                data[section] = earlier[section]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "offline.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "offline.md").write_text(_markdown(data), encoding="utf-8")


def _memory_words(data: dict[str, Any]) -> str:
    """What the pass without the duplicate memory says about the RSS growth (newer runs only)."""
    bare = data.get("read_without_duplicate_memory")
    if bare is None:
        return ""
    marks = " / ".join(str(m) for m in bare["rss_mb_at_quarters"])
    return f"""

The same reading without the memory of recent span and turn ids (`remember_spans=0`,
`remember_turns=0`, run first, since RSS only grows): {marks} MB. What the default pass adds
over the file is that memory, which detects spans and traces read twice: one 64-bit hash of each
id, capped at the last 200,000 spans and 1,000,000 turns, so it stops growing there."""


def _cpu_ratio_words(r: dict[str, Any], p: dict[str, Any]) -> str:
    """The same ratio in spans per CPU-second of this process (newer runs only): what a
    machine shared with other jobs leaves comparable, where wall-clock rates measure the load."""
    if "spans_per_cpu_s" not in r:
        return ""
    ratio = r["spans_per_cpu_s"] / p["spans_per_cpu_s"]
    return f""" Per CPU-second of this process (both sides single-threaded, so
the other jobs on the machine only slow them down, they are not counted):
{r["spans_per_cpu_s"]:,.0f} against {p["spans_per_cpu_s"]:,.0f} spans, **{ratio:.2f}x** (target
3.5x)."""


def _stage_words(data: dict[str, Any]) -> str:
    """What each stage of the read path costs (newer runs only)."""
    st = data.get("read_stages")
    if st is None:
        return ""
    full = st["full_us_per_span"]

    def part(key: str) -> str:
        return f"{st[key]:.1f} µs ({st[key] / full:.0%})"

    return f"""

CPU per span of each stage (the peer's slice, {st["spans"]:,} spans, median of 3 after a warm-up;
each stage is the difference between two runs): parsing the records into spans
{part("parse_us_per_span")}, the duplicate-id memory and window reassembly
{part("window_us_per_span")}, assembling turns {part("assembly_us_per_span")}; {full:.1f} µs in
all.""" + _compared_words(data.get("read_stages_compared"))


def _compared_words(c: dict[str, Any] | None) -> str:
    """The stages before and after the last change to the read path, from one run (`compare`)."""
    if c is None:
        return ""
    b, a = c["before"], c["after"]

    def row(label: str, key: str) -> str:
        return f"| {label} | {b[key]:.1f} | {a[key]:.1f} | {a[key] / b[key]:.2f} |"

    ratios = " / ".join(f"{r:.2f}" for r in a["ratio_to_peer_runs"])
    return f"""

Before and after the last change to the read path, measured alike in one run (`python -m
tests.benchmarks.bench_offline compare {c["before_revision"]}`: fresh processes alternating
{c["rounds"]} times between `src/` of {c["before_revision"]} and this tree, the same
{c["spans"]:,} spans; medians; 1-minute load average {c["load_average_1m_at_start"]:.1f} at the
start, {c["load_average_1m_at_end"]:.1f} at the end):

| CPU µs per span | before ({c["before_revision"]}) | after | after / before |
|---|---:|---:|---:|
{row("parsing", "parse_us_per_span")}
{row("window reassembly", "window_us_per_span")}
{row("assembling turns", "assembly_us_per_span")}
{row("the whole read path", "full_us_per_span")}
{row("peer: protobuf JSON parse", "peer_us_per_span")}

The whole read path against the peer: {b["peer_us_per_span"] / b["full_us_per_span"]:.2f}x
before, {a["peer_us_per_span"] / a["full_us_per_span"]:.2f}x after (medians; each round's ratio
after: {ratios})."""


def _read_run_words(data: dict[str, Any]) -> str:
    """When the reading section was measured on its own (`read`), the load it ran under."""
    m = data.get("read_machine")
    if m is None:
        return ""
    return f""" This section was measured on its own (`python -m
tests.benchmarks.bench_offline read`; 1-minute load average {m["load_average_1m_at_start"]:.1f}
at its start, {m["load_average_1m_at_end"]:.1f} at its end: {
        _load_words(m["load_average_1m_at_start"])
    })."""


def _load_words(load: float) -> str:
    """What the load average says about the figures beside it."""
    if load < 1.0:
        return "nothing else was running when it started"
    return "the two cores were shared with other jobs, so every rate is a floor"


def _markdown(data: dict[str, Any]) -> str:
    f, r, p = data["file"], data["read"], data["peer_protobuf_parse"]
    w, s = data["end_to_end_quoted_spans"], data["scoring_slice"]
    w1, w2, peer = s["workers_1"], s["workers_2"], s["peer_evaluate_many"]
    load = data["machine"]["load_average_1m_at_end"]
    start = data["machine"].get("load_average_1m_at_start", 9.0)
    h1, h2 = s["heavy_workers_1"], s["heavy_workers_2"]
    read_row = f"{r['spans_per_s']:,.0f} | {r['turns_per_s']:,.0f} | {r['mb_per_s']:.1f}"
    extra = _stage_words(data) + _memory_words(data)
    peer_row = f"{peer['turns_per_s']:,.0f} | {peer['turns_per_s'] / w1['turns_per_s']:.2f}"
    return f"""# Offline re-scoring benchmark

Generated OTLP/JSON-lines file: {f["bytes"] / 2**20:.0f} MB, {f["lines"]:,} lines, {f["spans"]:,}
spans, {f["turns"]:,} turns (7 spans a line, so most traces are split across lines). The issue
asks for a 1 GB-scale file; on this shared 2-core machine a quarter of that keeps the run under
four minutes and is enough to see whether memory grows. Python {data["machine"]["python"]},
{data["machine"]["cpus"]} CPUs. Regenerate with `python -m tests.benchmarks offline`.

## Reading (stream, reassemble traces, assemble turns; no scoring)

| | spans/s | turns/s | MB/s |
|---|---:|---:|---:|
| groundwire readers + assembler | {read_row} |
| peer: protobuf `json_format` parse only (first eighth) | {p["spans_per_s"]:,.0f} | – | – |

groundwire reads, reassembles and assembles turns at {r["spans_per_s"] / p["spans_per_s"]:.1f}x
the rate protobuf's JSON mapping merely parses.{_cpu_ratio_words(r, p)} RSS (MB) after each
quarter of the file and at the end: {" / ".join(str(m) for m in r["rss_mb_at_quarters"])}; at
most {r["peak_held_spans"]:,} spans were held for reassembly at once ({r["forced_traces"]} traces
released early).{_read_run_words(data)}{extra}

## End to end, whole file (`rescore`, `quoted_spans`, .jsonl out, 1 process)

{w["turns"]:,} turns in {w["seconds"]:.0f} s: {w["turns_per_s"]:,.0f} turns/s,
{w["spans_per_s"]:,.0f} spans/s. RSS (MB) at each quarter and at the end:
{" / ".join(str(m) for m in w["rss_mb_at_quarters"])}.

## Scoring with the deterministic evaluators (slice of {w1["turns"]:,} turns)

`quoted_spans` + `quote_verification` (BM25 + fuzzy alignment, no embeddings), read, scored and
written to .jsonl:

| | turns/s | vs 1 worker |
|---|---:|---:|
| `rescore`, 1 worker | {w1["turns_per_s"]:,.0f} | 1.00 |
| `rescore --workers 2` | {w2["turns_per_s"]:,.0f} | {s["speedup_2_over_1"]:.2f} |
| peer: `evaluate_many` on turns in memory | {peer_row} |

With a CPU-heavy evaluator, `quote_verification` with its default sentence embedder on every
quote (`cosine="always"`; {h1["turns"]} turns generated with texts that differ from turn to turn,
as real traces' do, since the process-wide embedding cache makes a repeated text free; 4 turns
per chunk): {h1["turns_per_s"]:.2f} turns/s with 1 worker, {h2["turns_per_s"]:.2f} with 2: a
speed-up of {s["heavy_speedup_2_over_1"]:.2f}.

Output with 2 workers identical to 1 worker: {s["workers_2_identical_output"]}. 1-minute load
average {load:.1f} at the end of the run, {start:.1f} at its start ({_load_words(start)}); the
worker processes also pay a start-up (fork server, imports) that a longer run amortises, and with
evaluators this cheap (about a millisecond a turn) this process's own share (reading,
assembling, pickling, writing) is a large part of the work. The `evaluate_many` row scores the
same turns already in memory (no reading, assembly or writing), but runs each sync evaluation in
a thread from an event loop, which costs more than the scoring here.
""" + (_rotated_markdown(data["rotated"]) if "rotated" in data else "")


def _rotated_markdown(rot: dict[str, Any]) -> str:
    """The rotated-parts section (`python -m tests.benchmarks.bench_offline rotated`)."""
    g, e = rot["grouping"], rot["engines"]

    def secs(row: dict[str, Any]) -> str:
        t = row["seconds"]
        return f"{t['median']:.1f} s ({t['min']:.1f}-{t['max']:.1f})"

    def rate(name: str) -> str:
        t = e[name]["turns_per_s"]
        return f"{t['median']:,.0f} ({t['min']:,.0f}-{t['max']:,.0f})"

    def cpu(name: str, key: str) -> str:
        t = e[name].get(key)
        return "–" if t is None else f"{t['median']:,.0f}"

    def row(name: str, label: str) -> str:
        return (
            f"| {label} | {rate(name)} | {cpu(name, 'tree_cpu_us_per_turn')} | "
            f"{cpu(name, 'machine_cpu_us_per_turn')} | {cpu(name, 'parent_cpu_us_per_turn')} |"
        )

    cap = ""
    if "local_speedup_cap_2_cores" in e:
        cap = f"""
Where the second core goes: with 2 workers the machine spends
{e["local_cpu_added_by_second_worker"]:+.0%} CPU per turn (local: pickling the turns and scores,
the pipes, a third busy process on two cores) and {e["ray_cpu_added_by_second_worker"]:+.0%}
(Ray) over 1 worker, while the local parent (reading, grouping, assembling, writing) keeps its
share. Ray already spends {e["ray_1"]["machine_cpu_us_per_turn"]["median"]:,.0f} µs of CPU a turn
with 1 worker, against {e["local_1"]["machine_cpu_us_per_turn"]["median"]:,.0f} µs locally
(machine-wide; docs/offline.md, "Ray", says what each of its stages costs). Two cores do at
most two CPU-seconds a second, so with that much work
per turn the speed-up over 1 worker cannot pass {e["local_speedup_cap_2_cores"]:.2f}x (local) and
{e["ray_speedup_cap_2_cores"]:.2f}x (Ray) on this machine, however well the work is scheduled:
the measured speed-up reaches {e["local_speedup"] / e["local_speedup_cap_2_cores"]:.0%} and
{e["ray_speedup"] / e["ray_speedup_cap_2_cores"]:.0%} of those caps.
"""

    mb = rot["file"]["bytes"] / 2**20
    wr, gr = g["window_over_read"], g["whole_over_read"]
    return f"""
## Rotated parts: whole-trace grouping and the engines

The same generated file ({mb:.0f} MB) cut into {rot["parts"]} rotated parts at line boundaries
(traces straddle the cuts), as the Collector's file exporter leaves them. 1-minute load average
{rot["load_average_1m_at_end"]:.1f} at the end, {rot.get("load_average_1m_at_start", 9):.1f} at the
start ({_load_words(rot.get("load_average_1m_at_start", 9.0))}).
Regenerate this section alone with
`python -m tests.benchmarks.bench_offline rotated`.

Cost of grouping every span by trace id (several files: spill partitions on disk, then each
trace whole) against reading alone and against the single-file window, all {rot["parts"]} parts
of the whole file, {rot["grouping_runs"]} run(s) each (median, min-max):

| step | time | vs reading alone |
|---|---:|---:|
| reading alone (parse every record, no reassembly) | {secs(g["read_alone"])} | 1.00 |
| reading + window reassembly + turns (one file's path) | {secs(g["window"])} | {wr:.2f} |
| reading + whole grouping + turns (several files' path) | {secs(g["whole"])} | {gr:.2f} |

Engines (median of {rot["runs"]} interleaved rounds, min-max) on the first
1/{rot["engine_fraction"]} of the file ({e["local_1"]["turns"]:,} turns, cut
again into {rot["parts"]} parts), `quoted_spans` + `quote_verification` (no embeddings), .jsonl out,
after the same warm-up run on one part for each; Ray is a local instance with 2 CPUs started once
before (its start-up is not counted; each run's plan, shuffle and actor start-up are):

| engine | turns/s | our processes' CPU µs/turn | machine CPU µs/turn | parent's CPU µs/turn |
|---|---:|---:|---:|---:|
{row("local_1", "local, 1 worker")}
{row("local_2", "local, `--workers 2`")}
{row("ray_1", "Ray, 1 worker")}
{row("ray_2", "Ray, 2 workers")}

Speed-up from the second core: local {e["local_speedup"]:.2f}x (efficiency of the added core
{e["local_efficiency_added_core"]:.2f}), Ray {e["ray_speedup"]:.2f}x (efficiency
{e["ray_efficiency_added_core"]:.2f}); the target is 0.8. Outputs of all four identical, byte for
byte: {e["identical_outputs"]}.
{_ray_cost_words(e)}{cap}"""


def _ray_cost_words(e: dict[str, Any]) -> str:
    """Ray's CPU per turn against the local engine's (newer runs only)."""
    if "ray_cpu_over_local" not in e:
        return ""
    return f"""
Ray's CPU per turn with 1 worker is {e["ray_cpu_over_local"]:.2f}x the local engine's (target
1.2x), counted over our own processes only (this process and every process below it: the local
engine's workers, Ray's raylet, GCS, workers and tasks, Ray's idle daemons included; sampled
from /proc every 0.1 s), so other jobs on the machine do not count; the machine-wide column
counts them.
"""


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["rotated"]:
        rotated()
    elif sys.argv[1:] == ["read"]:
        read_path()
    elif sys.argv[1:2] == ["compare"] and len(sys.argv) == 3:
        compare(sys.argv[2])
    else:
        main()
