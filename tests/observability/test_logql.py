"""The logs panel's LogQL parses with Grafana's own LogQL grammar.

No Loki runs here, but Grafana publishes the grammar its Loki query editor parses LogQL with
(`@grafana/lezer-logql` on npm). Each query, with the dashboard variables filled in as Grafana
does, must parse without an error node and have the stages it is meant to have.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.observability.conftest import load_dashboard, npm_modules, panels

pytestmark = pytest.mark.slow
"""Slow: the npm install runs once per session."""

HERE = Path(__file__).parent
NPM_PACKAGES = ("@grafana/lezer-logql@0.4.2",)
VARIABLES = {"$service": "(library-bot|support-bot)", "$evaluator": ".*", "$threshold": "0.5"}
"""Values as Grafana interpolates them for Loki: multi-value as a regex group, All as `.*`."""


@pytest.fixture(scope="session")
def logql_modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Grafana's LogQL grammar installed from npm into a temporary folder."""
    return npm_modules(tmp_path_factory, "logql-npm", NPM_PACKAGES, "run Grafana's LogQL grammar")


def _parse(modules: Path, exprs: dict[str, str]) -> dict[str, Any]:
    """Error offsets and node types of each expression, from the grammar."""
    done = subprocess.run(
        ["node", str(HERE / "logql_parse.cjs"), str(modules)],
        input=json.dumps(exprs),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    parsed: dict[str, Any] = json.loads(done.stdout)
    return parsed


def _filled(expr: str) -> str:
    """The expression with the dashboard variables filled in."""
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def test_logs_panel_queries_parse_with_grafanas_grammar(logql_modules: Path) -> None:
    """Both queries parse cleanly: selector, label filters, a number filter, line_format."""
    (panel,) = [p for p in panels(load_dashboard()) if p["type"] == "logs"]
    exprs = {t["refId"]: _filled(t["expr"]) for t in panel["targets"]}
    exprs["broken"] = exprs["A"].replace("| line_format", "| line_format |")
    parsed = _parse(logql_modules, exprs)
    assert parsed["broken"]["errors"], "the grammar must reject a broken query"
    for ref in ("A", "B"):
        assert parsed[ref]["errors"] == [], (ref, exprs[ref])
        assert {"Selector", "LabelFilter", "LineFormatExpr"} <= set(parsed[ref]["nodes"]), ref
    assert "NumberFilter" in parsed["B"]["nodes"]
