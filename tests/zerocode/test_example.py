"""examples/zero_code: the Kubernetes manifests are consistent, and run locally (the
operator's environment under `opentelemetry-instrument`) they score every turn of the app."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundwire import semconv
from tests.zerocode._run import ROOT

EXAMPLE = ROOT / "examples" / "zero_code"
SCRIPT = EXAMPLE / "run_locally.py"


def _load(name: str) -> dict[str, Any]:
    """One manifest of the example, parsed."""
    return yaml.safe_load((EXAMPLE / name).read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_manifests_name_each_other_and_only_known_variables() -> None:
    """The pod asks for the Instrumentation by name; every GROUNDWIRE_* variable is one groundwire
    reads; the endpoint is the Collector's OTLP/HTTP port (the Python distro speaks HTTP)."""
    instrumentation, deployment = _load("instrumentation.yaml"), _load("deployment.yaml")
    assert instrumentation["apiVersion"] == "opentelemetry.io/v1alpha1"
    assert instrumentation["kind"] == "Instrumentation"
    assert instrumentation["spec"]["exporter"]["endpoint"].endswith(":4318")
    template = deployment["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    annotation = annotations["instrumentation.opentelemetry.io/inject-python"]
    assert annotation == instrumentation["metadata"]["name"]
    known = {v for k, v in vars(semconv).items() if k.startswith("ENV_")}
    (container,) = template["spec"]["containers"]
    ours = [e["name"] for e in container["env"] if e["name"].startswith("GROUNDWIRE_")]
    assert ours and set(ours) <= known
    assert "GROUNDWIRE_EVALUATORS" in ours
    assert template["metadata"]["labels"] == deployment["spec"]["selector"]["matchLabels"]


def test_the_docstring_says_what_and_how_to_run() -> None:
    """Like every example: a docstring naming what it shows and the command that runs it."""
    docstring = SCRIPT.read_text(encoding="utf-8").split('"""')[1]
    assert "What it shows" in docstring
    assert f".venv/bin/python {SCRIPT.relative_to(ROOT)}" in docstring


@pytest.mark.slow
def test_run_locally_scores_every_turn_on_the_distros_providers(tmp_path: Path) -> None:
    """Three turns, two evaluators each: six results as span events and as log records, and the
    counter says six; the misquoted answers score 0 on quote_verification."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.count("\nQ: ") + out.startswith("Q: ") == 3
    assert "turn 'Does the library charge late fees?': quote_verification=1.0" in out
    assert "turn 'For how long may books be borrowed?': quote_verification=0.0" in out
    assert out.count("\nturn '") == 3
    assert "gen_ai.evaluation.result log records: 6" in out
    assert "groundwire.evaluations ok: 6" in out
    assert "providers: the distro's (telemetry.auto.version" in out
