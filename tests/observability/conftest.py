"""Fixtures for the observability stack: the example files, and a real Prometheus binary.

Prometheus comes from Debian's `prometheus` package (it ships `promtool` too), installed here when
missing; the tests that need it are skipped, with the reason, only where it cannot be installed
(not root, or no apt-get).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tests._debian import install_debian_packages

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "observability"
DASHBOARD = EXAMPLE / "grafana" / "dashboards" / "groundwire-rag-quality.json"
RULES = EXAMPLE / "prometheus" / "groundwire-rules.yml"


@pytest.fixture(scope="session")
def prometheus_bin() -> tuple[str, str]:
    """Paths of `prometheus` and `promtool`, installing the Debian package once when missing."""
    if shutil.which("prometheus") is None or shutil.which("promtool") is None:
        reason = install_debian_packages(["prometheus"], "Prometheus")
        if reason is not None:
            pytest.skip(reason)
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    assert prometheus is not None and promtool is not None, "the package installed no binaries"
    return prometheus, promtool


def load_dashboard() -> dict[str, Any]:
    """The dashboard JSON as provisioned."""
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel that shows data (rows are layout only), including panels nested in rows."""
    found: list[dict[str, Any]] = []
    for item in dashboard["panels"]:
        if item["type"] == "row":
            found.extend(item.get("panels", []))
        else:
            found.append(item)
    return found


def npm_modules(
    tmp_path_factory: pytest.TempPathFactory, name: str, packages: Sequence[str], why: str
) -> Path:
    """`packages` installed from npm into a fresh temporary folder: its `node_modules`.

    Skips (a failure with CI=true, see tests/conftest.py) when node or npm is missing."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"node and npm are needed to {why}")
    prefix = tmp_path_factory.mktemp(name)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *packages],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"npm install failed:\n{done.stderr[-3000:]}"
    return prefix / "node_modules"
