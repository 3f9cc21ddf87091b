"""Runs the fenced blocks of a Markdown page with Sybil, as a reader would paste them.

- ```python blocks run as a script (`python snippet.py`) in a workspace folder holding the files
  the docs name (`traces.jsonl`, `gold.jsonl`, ...): as pasted, `__main__` guard and all, and
  without touching this test process's global OpenTelemetry providers.
- An `<!-- invisible-code-block: python ... -->` after a block checks what the docs say it gives:
  it runs as one script with the visible block before it. One whose first line is `SETUP`
  (`# set-up for the next block`) defines what a fragment assumes (a `turn`, a model) and runs
  in front of the next visible block instead.
- ```bash and ```console blocks run in bash (`set -eo pipefail`) in the same folder, `$ ` lines
  only for console, with the venv's `groundwire` first on PATH. Hosts the docs use as examples
  (`http://collector:4318`) are replaced by real servers the test starts.
- A block not meant to run carries Sybil's marker with the reason, e.g.
  `<!-- skip: next "installs packages into your environment" -->`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import SkipTest

from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser, SkipParser

from tests.docs._markdown import ROOT

SETUP = "# set-up for the next block"
"""First line of an invisible block that prepares the next visible one."""
TIMEOUT_S = 240
"""One block; a few seconds each alone, more on a busy shared machine."""


@dataclass
class Workspace:
    """Where blocks run: the folder, the environment, and example hosts -> real endpoints."""

    path: Path
    env: dict[str, str]
    hosts: Mapping[str, str] = field(default_factory=dict)

    def localise(self, text: str) -> str:
        """The block with its example hosts pointed at the servers the test started."""
        for name, real in self.hosts.items():
            text = text.replace(name, real)
        return text

    def run(self, argv: list[str], source: str, what: str) -> str | None:
        """Run one block; None when it succeeded, else a message with its output."""
        done = subprocess.run(
            argv,
            input=source,
            cwd=self.path,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
        if done.returncode == 0:
            return None
        output = f"--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
        return f"{what} exited {done.returncode}\n{output}"


def _shell_commands(language: str, source: str) -> str:
    """The commands of a shell block: `$ ` lines (and their continuations) for console."""
    if language != "console":
        return source
    commands: list[str] = []
    continued = False
    for line in source.splitlines():
        if line.startswith("$ ") or continued:
            commands.append(line[2:] if line.startswith("$ ") else line)
            continued = line.rstrip().endswith("\\")
    return "\n".join(commands) + "\n"


class _Evaluators:
    """Sybil evaluators bound to one workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def python(self, example: Example) -> str | None:
        """A visible block runs alone, after its set-up if one stands before it; an invisible
        check runs after the visible block before it."""
        namespace = example.namespace
        source = self.workspace.localise(str(example.parsed))
        if example.region.lexemes.get("directive") == "invisible-code-block":
            if source.startswith(SETUP):
                namespace["_setup"] = source
                return None
            source = namespace.get("_last_python", "") + "\n" + source
        else:
            source = namespace.pop("_setup", "") + source
            namespace["_last_python"] = source
        script = self.workspace.path / f"snippet_line_{example.line}.py"
        script.write_text(source, encoding="utf-8")  # a file: worker processes import it
        where = f"{example.path}:{example.line}"
        return self.workspace.run([sys.executable, script.name], "", f"python block at {where}")

    def shell(self, example: Example) -> str | None:
        """The block's commands in one bash script that stops at the first failure."""
        language = str(example.region.lexemes.get("arguments"))
        commands = self.workspace.localise(_shell_commands(language, str(example.parsed)))
        where = f"{example.path}:{example.line}"
        return self.workspace.run(
            ["bash", "-c", "set -eo pipefail\n" + commands], "", f"{language} block at {where}"
        )


@dataclass
class Outcome:
    """What became of one block: ran, skipped by its marker (with the reason), or failed."""

    line: int
    kind: str
    detail: str = ""


def run_page(relative: str, workspace: Workspace) -> list[Outcome]:
    """Every python, bash and console block of the page, in order, each one's outcome."""
    evaluators = _Evaluators(workspace)
    sybil = Sybil(
        parsers=[
            CodeBlockParser("python", evaluators.python),
            CodeBlockParser("bash", evaluators.shell),
            CodeBlockParser("console", evaluators.shell),
            SkipParser(),
        ]
    )
    document = sybil.parse(ROOT / relative)
    outcomes: list[Outcome] = []
    for example in document:
        kind = "skip" if isinstance(example.parsed, tuple) else "block"
        try:
            example.evaluate()
        except SkipTest as skipped:
            outcomes.append(Outcome(example.line, "skipped", str(skipped)))
            continue
        except Exception as error:  # a failing block: keep going, report all at the end
            outcomes.append(Outcome(example.line, "failed", str(error)))
            continue
        if kind == "block":
            outcomes.append(Outcome(example.line, "ran"))
    return outcomes


def clean_environment(**extra: Any) -> dict[str, str]:
    """The environment a reader would have: no OTEL_/GROUNDWIRE_/OPENAI_ settings of this
    machine, the venv's scripts first on PATH, plus `extra`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OTEL_", "GROUNDWIRE_", "OPENAI_", "PYTEST_"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env.update({key: str(value) for key, value in extra.items()})
    return env
