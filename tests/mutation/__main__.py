"""`make mutation`: run mutmut on the core modules and write the kill score per module.

    python -m tests.mutation [--only PATTERN ...] [--children N]
    python -m tests.mutation --rerun MUTANT ...   # re-run survivors after adding tests
    python -m tests.mutation --render   # rewrite mutation.md from mutation.json (after a merge)

Mutants are made by mutmut from `[tool.mutmut]` in pyproject.toml; each runs against the selected
tests that reach its function. A mutant counts as killed when a test fails on it. Survivors listed
in tests/mutation/equivalent.toml (with the reason each is equivalent) are left out of the score;
every other survivor, and every mutant no test reaches, counts against it. Results go to
tests/benchmarks/results/mutation.md and mutation.json. Not part of the default test run.

`--rerun` re-runs the named mutants in the mutants/ folder of the last run (mutmut keeps every
other result) and re-scores: a module whose mutants were all checked there is scored afresh; a
module only partly run there keeps its earlier score, with the re-run mutants a test now kills
moved from its survivors to killed. mutmut maps tests to the functions they reach when a test
is new to it: kill a survivor with a new test function, since an assertion added to an older
test that did not reach the mutant's function before is not run against it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "benchmarks" / "results"
EQUIVALENT = Path(__file__).with_name("equivalent.toml")
TARGET = 0.90
_LINE = re.compile(r"^\s*(?P<name>\S+): (?P<status>.+)$")


def _mutmut(*args: str, env: dict[str, str]) -> str:
    """Run the mutmut CLI beside this interpreter; its output as text."""
    mutmut = Path(sys.executable).with_name("mutmut")
    done = subprocess.run(
        [str(mutmut), *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode not in (0, 1) or "failed to collect stats" in done.stdout:
        # mutmut exits 1 both when mutants survive and when the clean run of the selected tests
        # fails (every mutant then stays "not checked"): the second is no score at all.
        output = (done.stdout + done.stderr)[-3000:]
        sys.exit(f"mutmut {' '.join(args)} failed ({done.returncode}):\n{output}")
    return done.stdout


def _module(mutant: str) -> str:
    """`groundwire.runner._sampling.x_trace_sampled__mutmut_3` -> `groundwire.runner._sampling`."""
    parts = mutant.split(".")
    while parts and (parts[-1].startswith("x_") or parts[-1].startswith("xǁ")):
        parts.pop()
    return ".".join(parts)


def main() -> None:
    """Run, score per module, write the results page."""
    parser = argparse.ArgumentParser(prog="python -m tests.mutation")
    parser.add_argument("--only", nargs="*", default=[], help="mutant name patterns (mutmut's)")
    parser.add_argument("--children", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--render", action="store_true", help="only rewrite mutation.md from mutation.json"
    )
    parser.add_argument(
        "--rerun", nargs="+", default=[], help="mutant names to re-run in the last mutants/"
    )
    args = parser.parse_args()
    equivalent: dict[str, str] = tomllib.loads(EQUIVALENT.read_text())["equivalent"]
    if args.render:
        _render(_earlier_all(), equivalent)
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT / "mutants" / "src")}
    if args.rerun:
        if not (ROOT / "mutants" / "mutmut-stats.json").exists():
            sys.exit("--rerun needs the mutants/ folder of an earlier run")
        _mutmut("run", "--max-children", str(args.children), *args.rerun, env=env)
    else:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)
        # The folder must exist before the interpreter starts, or the import system caches it
        # as missing and the tests import the unmutated package.
        (ROOT / "mutants" / "src").mkdir(parents=True)
        _mutmut("run", "--max-children", str(args.children), *args.only, env=env)
    tally: dict[str, Counter[str]] = defaultdict(Counter)
    survivors: dict[str, list[str]] = defaultdict(list)
    killed: set[str] = set()
    stale: list[str] = []
    for line in _mutmut("results", "--all", "true", env=env).splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        name, status = match["name"], match["status"].strip()
        module = _module(name)
        if name in equivalent and status != "killed":
            tally[module]["equivalent"] += 1
            continue
        if name in equivalent:  # killed after all: the key is stale (the mutants were renumbered)
            stale.append(name)
        tally[module][status] += 1
        if status == "killed":
            killed.add(name)
        elif status != "not checked":
            survivors[module].append(f"{name} ({status})")
    _render(_write(tally, survivors, _earlier(), killed), equivalent)
    if stale:
        print(
            "equivalent.toml names mutants a test now kills (counted as killed; re-key or drop):\n"
            + "\n".join(f"  {name}" for name in stale),
            file=sys.stderr,
        )


def _earlier_all() -> dict[str, dict[str, Any]]:
    """Every module of the last results file (scored or not)."""
    try:
        loaded: dict[str, dict[str, Any]] = json.loads((RESULTS / "mutation.json").read_text())
    except (OSError, ValueError):
        return {}
    return loaded


def _earlier() -> dict[str, dict[str, object]]:
    """Scores of an earlier run, kept for the modules this run (`--only`) did not test."""
    try:
        loaded: dict[str, dict[str, object]] = json.loads((RESULTS / "mutation.json").read_text())
    except (OSError, ValueError):
        return {}
    return {module: data for module, data in loaded.items() if data.get("score") is not None}


def _write(
    tally: dict[str, Counter[str]],
    survivors: dict[str, list[str]],
    earlier: dict[str, dict[str, object]],
    killed: set[str],
) -> dict[str, dict[str, Any]]:
    """The results data per module from this run's tallies (and earlier scores kept)."""
    data: dict[str, dict[str, Any]] = {}
    for module in sorted(tally):
        counts = tally[module]
        if set(counts) <= {"not checked", "equivalent"}:
            data[module] = dict(earlier[module]) if module in earlier else {**counts, "score": None}
            continue
        if counts["not checked"] and module in earlier:  # partly re-run (`--rerun`)
            data[module] = _rekilled(dict(earlier[module]), killed)
            continue
        counted = sum(v for k, v in counts.items() if k != "equivalent")
        score = counts["killed"] / counted if counted else 1.0
        data[module] = {
            **counts,
            "score": round(score, 4),
            "measured": datetime.date.today().isoformat(),
            "survivors": survivors[module],
        }
    return data


def _rekilled(counts: dict[str, Any], killed: set[str]) -> dict[str, Any]:
    """An earlier module result with its survivors that a test now kills counted as killed."""
    left = []
    for entry in counts.get("survivors", []):
        name, _, status = entry.rpartition(" (")
        if name in killed:
            counts[status.rstrip(")")] -= 1
            counts["killed"] = counts.get("killed", 0) + 1
        else:
            left.append(entry)
    if len(left) == len(counts.get("survivors", [])):
        return counts
    checked = sum(
        int(v)
        for k, v in counts.items()
        if k not in ("score", "survivors", "equivalent", "measured")
    )
    counts["score"] = round(counts["killed"] / checked, 4)
    counts["measured"] = datetime.date.today().isoformat()
    counts["survivors"] = left
    return counts


def _rows(data: dict[str, dict[str, Any]]) -> list[str]:
    """One table row per module, with the day its score was measured."""
    rows = []
    for module, counts in sorted(data.items()):
        equivalent = int(counts.get("equivalent", 0))
        if counts.get("score") is None:
            rows.append(f"| `{module}` | – | – | {equivalent} | not run | – |")
            continue
        score = float(counts["score"])
        killed = int(counts.get("killed", 0))
        counted = sum(
            int(v)
            for k, v in counts.items()
            if k not in ("score", "survivors", "equivalent", "measured")
        )
        when = f" ({counts.get('measured', 'earlier run')})"
        rows.append(
            f"| `{module}` | {killed} | {counted - killed} | {equivalent} | {score:.1%}{when} | "
            f"{'met' if score >= TARGET else 'MISSED'} |"
        )
    return rows


def _render(data: dict[str, dict[str, Any]], equivalent: dict[str, str]) -> None:
    """Write tests/benchmarks/results/mutation.json and mutation.md from the per-module data."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "mutation.json").write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    rows = _rows(data)
    lines = [
        "# Mutation testing (mutmut)",
        "",
        "Written by `make mutation` (`python -m tests.mutation`). Score = killed / (mutants -",
        f"equivalent); survivors and mutants no selected test reaches count against it. Target"
        f" {TARGET:.0%} per module. An equivalent entry only excludes a mutant that survived (a"
        " killed one counts as killed; since 2026-11-25: rows measured earlier may still hold"
        " entries whose mutants were renumbered).",
        "",
        "| module | killed | survived or unreached | equivalent | score | target |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        "## Equivalent mutants (left out of the score)",
        "",
        *[f"- `{name}`: {reason}" for name, reason in sorted(equivalent.items())],
        "",
        "## Survivors",
        "",
        *[f"- {s}" for module in sorted(data) for s in data[module].get("survivors", [])],
        "",
    ]
    (RESULTS / "mutation.md").write_text("\n".join(lines))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
