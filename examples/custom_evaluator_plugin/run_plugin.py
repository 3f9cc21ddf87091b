"""A custom evaluator, plugged in two ways: `register_evaluator` at run time, or an entry point.

What it shows:
1. `groundwire.register_evaluator("citation_markers", CitationMarkers)`: the evaluator is usable
   by name in this process (`groundwire.evaluate`, `configure(evaluators=[...])`, ...).
2. The plug-in way: `pyproject.toml` here declares the entry point

       [project.entry-points."groundwire.evaluators"]
       citation_markers = "citation_markers:CitationMarkers"

   so after `pip install ./examples/custom_evaluator_plugin` every groundwire process finds it,
   exactly like the built-ins (`groundwire evaluators` lists it). To show that without
   installing anything, this script writes the `.dist-info` folder pip would write (its
   `entry_points.txt` generated from the pyproject.toml declaration) into a temporary directory
   and runs a fresh Python process with that directory on its path.

No network, server or key. Run from the repository root:

    .venv/bin/python examples/custom_evaluator_plugin/run_plugin.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import groundwire
from groundwire import Context, RagTurn

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "src"
TURNS = [
    RagTurn(
        query="Does the library charge late fees?",
        contexts=[Context(text="The library no longer charges late fees.")],
        answer="No: \u201cThe library no longer charges late fees\u201d [1].",
    ),
    RagTurn(
        query="How long can I keep a book?",
        contexts=[Context(text="Books may be borrowed for three weeks.")],
        answer="Three weeks [1], renewable twice [3].",
    ),
    RagTurn(query="Is there wifi?", contexts=["Free wireless internet."], answer="Yes, free."),
]
CHILD = """
import groundwire
from groundwire import RagTurn
print("available:", ", ".join(groundwire.available_evaluators()))
turn = RagTurn(query="q", contexts=["a", "b"], answer="See [1] and [2], not [7].")
score = groundwire.evaluate(turn, ["citation_markers"])["citation_markers"]
print(f"via entry point: citation_markers={score.value:.3f} ({score.explanation})")
"""


def write_dist_info(site: Path) -> Path:
    """Write the `.dist-info` pip would install for this plug-in (entry points from pyproject)."""
    project = tomllib.loads((HERE / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name, version = project["name"], project["version"]
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    lines = []
    for group, entries in project["entry-points"].items():
        lines.append(f"[{group}]")
        lines.extend(f"{key} = {value}" for key, value in entries.items())
    (folder / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def main() -> None:
    """Score sample turns through `register_evaluator`, then through the entry point."""
    sys.path.insert(0, str(SOURCE))
    from citation_markers import CitationMarkers

    groundwire.register_evaluator("citation_markers", CitationMarkers)
    print("1. register_evaluator: scored in this process")
    for turn in TURNS:
        scores = groundwire.evaluate(turn, ["citation_markers", "quoted_spans"])
        shown = ", ".join(
            f"{n}={s.value if s.value is None else round(s.value, 3)}" for n, s in scores.items()
        )
        print(f"   {turn.query:38} {shown}  ({scores['citation_markers'].explanation})")
    strict = groundwire.evaluate(TURNS[2], {"citation_markers": {"require_citation": True}})
    value = strict["citation_markers"].value
    print(f"   with require_citation=True, an uncited answer scores {value}")

    print("2. entry point: a fresh process that finds the plug-in by its dist-info")
    with tempfile.TemporaryDirectory() as site:
        folder = write_dist_info(Path(site))
        print(f"   wrote {folder.name}/entry_points.txt:")
        for line in (folder / "entry_points.txt").read_text().splitlines():
            print(f"     {line}")
        path = os.pathsep.join([site, str(SOURCE), os.environ.get("PYTHONPATH", "")])
        child = subprocess.run(
            [sys.executable, "-c", CHILD],
            env={**os.environ, "PYTHONPATH": path},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
    for line in child.stdout.splitlines():
        print(f"   {line}")


if __name__ == "__main__":
    main()
