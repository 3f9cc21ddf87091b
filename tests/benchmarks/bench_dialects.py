"""Reading other instrumentors' traces: read + assemble rate vs OpenInference, same app, same run.

Inputs are the recorded traces of the same LCEL RAG app (tests/data/traces: OpenInference's,
OpenLLMetry's and MLflow's LangChain instrumentation, two questions each), of a LangGraph agent
answering the same questions over the same corpus (OpenInference, OpenLLMetry), and of a
GenAI-conventions-only service (`SOURCES`), each trace replicated
with fresh trace ids to `TRACES` traces per dialect under `tests/benchmarks/_work/` (deleted at
the end). Two measures, each the median of `ROUNDS` rounds (min and max shown) after one warm-up
round, the dialects taking turns within each round (rotated, so none always runs first):

1. read + assemble: `groundwire.offline.iter_turns` over the file (OTLP/JSON parsing, trace
   reassembly, turn assembly), in turns/s;
2. assemble only: `turns_from_spans` over the same spans already read into `SpanRecord`s.

The ratio is OpenInference's rate over the dialect's (above 1: the dialect is slower). Target:
within 1.5x. Run: `python -m tests.benchmarks dialects`. Writes results/dialects.{md,json}.
"""

from __future__ import annotations

import json
import os
import platform
import random
import re
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from groundwire.assembly import SpanRecord, turns_from_spans
from groundwire.offline import Problems, TurnCounts, iter_turns
from groundwire.offline.readers import read_file
from tests.benchmarks._timing import results_dir, scaled

HERE = Path(__file__).parent
RESULTS = results_dir()
WORK = HERE / "_work" / "dialects"
TRACES_DIR = HERE.parent / "data" / "traces"
SOURCES: Final = {
    "openinference": "openinference_langchain.jsonl",
    "openllmetry": "openllmetry_langchain.jsonl",
    "mlflow": "mlflow_langchain.jsonl",
    "openinference, LangGraph agent": "openinference_langgraph_agent.jsonl",
    "openllmetry, LangGraph agent": "openllmetry_langgraph_agent.jsonl",
    "GenAI conventions only (service)": "genai_service.jsonl",
}
"""The LCEL chain under three instrumentors; a LangGraph ReAct agent with a retriever tool over
the same corpus (same questions, same answers: the same turns) under two; and a service that
follows only the GenAI conventions (server, retrieval with `{id, score}`, chat with messages)."""
TRACES = int(os.environ.get("BENCH_DIALECTS_TRACES", str(scaled(1000, 20))))
ROUNDS = int(os.environ.get("BENCH_DIALECTS_ROUNDS", str(scaled(11, 1))))
_TRACE_ID = re.compile(r'("traceId":\s*")([0-9a-f]{32})(")')


def _turn_traces(source: Path) -> set[str]:
    """Trace ids of the source's traces that give a turn (OpenLLMetry writes a trace of its own
    at each `create_react_agent` call: no turn, left out of the replicas)."""
    spans = [s for batch in read_file(source, Problems(strict=True)) for s in batch.spans]
    return {turn.trace_id or "" for turn in turns_from_spans(spans)}


def _replicate(source: Path, target: Path, traces: int) -> Path:
    """`traces` traces: the source's lines (one trace each, those that give a turn) again and
    again, with fresh trace ids."""
    keep = _turn_traces(source)
    lines = [
        line
        for line in source.read_text(encoding="utf-8").splitlines()
        if line and (match := _TRACE_ID.search(line)) is not None and match.group(2) in keep
    ]
    rng = random.Random(7)
    with target.open("w", encoding="utf-8") as file:
        for index in range(traces):
            trace_id = f"{rng.getrandbits(128):032x}"
            line = lines[index % len(lines)]
            file.write(_TRACE_ID.sub(rf"\g<1>{trace_id}\g<3>", line))
            file.write("\n")
    return target


def _read_and_assemble(path: Path) -> tuple[float, int, int]:
    """Seconds, turns and spans for reading `path` and assembling its turns."""
    problems = Problems(strict=True)
    counts = TurnCounts()
    started = time.perf_counter()
    turns = sum(1 for _ in iter_turns([path], problems, counts))
    return time.perf_counter() - started, turns, problems.stats.spans


def _assemble_only(spans: list[SpanRecord]) -> tuple[float, int]:
    """Seconds and turns for assembling spans already read."""
    started = time.perf_counter()
    turns = len(turns_from_spans(spans))
    return time.perf_counter() - started, turns


def _rounds(measure: Callable[[str], float], names: list[str]) -> dict[str, list[float]]:
    """One warm-up round, then `ROUNDS` rounds; the order rotates each round."""
    for name in names:
        measure(name)
    times: dict[str, list[float]] = {name: [] for name in names}
    for index in range(ROUNDS):
        order = names[index % len(names) :] + names[: index % len(names)]
        for name in order:
            times[name].append(measure(name))
    return times


def _stats(seconds: list[float], turns: int) -> dict[str, float]:
    """Median, min and max rate (turns/s) over rounds."""
    rates = [turns / s for s in seconds]
    return {
        "median": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
    }


def main() -> None:
    """Run both measures on every dialect and write the results."""
    load_before = os.getloadavg()[0]
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    try:
        files = {
            name: _replicate(TRACES_DIR / source, WORK / source, TRACES)
            for name, source in SOURCES.items()
        }
        names = list(files)
        turns: dict[str, int] = {}
        spans: dict[str, int] = {}
        records: dict[str, list[SpanRecord]] = {}
        for name, path in files.items():
            _, turns[name], spans[name] = _read_and_assemble(path)
            problems = Problems(strict=True)
            records[name] = [s for batch in read_file(path, problems) for s in batch.spans]
            if turns[name] != TRACES:
                raise RuntimeError(f"{name}: {turns[name]} turns from {TRACES} traces")
        read = _rounds(lambda name: _read_and_assemble(files[name])[0], names)
        assemble = _rounds(lambda name: _assemble_only(records[name])[0], names)
        sizes = {name: files[name].stat().st_size / TRACES for name in names}
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    result: dict[str, Any] = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1min": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        },
        "traces_per_dialect": TRACES,
        "rounds": ROUNDS,
        "spans_per_trace": {name: spans[name] / TRACES for name in names},
        "bytes_per_trace": sizes,
        "read_and_assemble_turns_per_s": {n: _stats(read[n], turns[n]) for n in names},
        "assemble_only_turns_per_s": {n: _stats(assemble[n], turns[n]) for n in names},
    }
    base_read = result["read_and_assemble_turns_per_s"]["openinference"]["median"]
    base_asm = result["assemble_only_turns_per_s"]["openinference"]["median"]
    result["ratio_vs_openinference"] = {
        name: {
            "read_and_assemble": base_read
            / result["read_and_assemble_turns_per_s"][name]["median"],
            "assemble_only": base_asm / result["assemble_only_turns_per_s"][name]["median"],
        }
        for name in names
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "dialects.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "dialects.md").write_text(_markdown(result), encoding="utf-8")
    print(_markdown(result))


def _markdown(result: dict[str, Any]) -> str:
    """The results as a Markdown page."""
    lines = [
        "# Reading other instrumentors' traces (bench_dialects)",
        "",
        f"The same LCEL RAG app traced by each instrumentor, {result['traces_per_dialect']} traces "
        f"each (one turn per trace), median of {result['rounds']} rounds after a warm-up "
        f"(min-max), dialects interleaved in each round. Machine: {result['machine']['cpus']} "
        f"CPUs, Python {result['machine']['python']}, 1-minute load average "
        f"{result['machine']['load_average_1min'][0]} before and "
        f"{result['machine']['load_average_1min'][1]} after (shared machine: wide min-max). "
        "Ratio: OpenInference's rate / the dialect's (above 1 = slower; target within 1.5x).",
        "",
        "| dialect | spans/trace | bytes/trace | read + assemble, turns/s | ratio "
        "| assemble only, turns/s | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, spans in result["spans_per_trace"].items():
        read = result["read_and_assemble_turns_per_s"][name]
        asm = result["assemble_only_turns_per_s"][name]
        ratio = result["ratio_vs_openinference"][name]
        lines.append(
            f"| {name} | {spans:.0f} | {result['bytes_per_trace'][name]:,.0f} | "
            f"{read['median']:,.0f} ({read['min']:,.0f}-"
            f"{read['max']:,.0f}) | {ratio['read_and_assemble']:.2f} | {asm['median']:,.0f} "
            f"({asm['min']:,.0f}-{asm['max']:,.0f}) | {ratio['assemble_only']:.2f} |"
        )
    lines += [
        "",
        "Agents against chains: the LangGraph agent's traces hold the same turns as the chain's "
        "(same corpus, questions and answers) in more spans (graph nodes, tool calls, two model "
        "calls), so the ratio of an agent row to its instrumentor's chain row is the cost per turn "
        "of the agent's shape (target: at most 1.5x).",
        "",
        "OpenLLMetry writes every component's input and output twice (`traceloop.entity.*` and "
        "`gen_ai.task.*`), so its traces are about twice the bytes of the others and reading "
        "(JSON parsing) them costs more; assembling turns from spans already read is the "
        "like-for-like comparison of the dialect readers.",
        "",
        "Run: `python -m tests.benchmarks dialects` (`BENCH_DIALECTS_TRACES`, "
        "`BENCH_DIALECTS_ROUNDS` to change the size).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
