"""Suite-wide rules: with CI=true a test that needs a real part (node, apt, a download) never skips.

Locally a missing part (no node, no root for apt, no registry) skips with its reason, so a
developer can still run the rest. On CI the same skip would hide an untested promise, so it fails
with that reason instead; `.ci/run` and `make test` install what those tests need.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

_TRUE = frozenset({"1", "true", "yes", "on"})


def _on_ci() -> bool:
    """True when the `CI` variable says this is a CI run (as GitHub, GitLab and ours set it)."""
    return os.environ.get("CI", "").strip().lower() in _TRUE


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, pytest.TestReport]:
    """On CI, turn a skip into a failure that names what was missing."""
    report: pytest.TestReport = yield
    if _on_ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped on CI (CI=true requires every real part): {reason}"
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, Any, pytest.CollectReport]:
    """On CI, a module skipped at import (`pytest.importorskip`) fails collection instead."""
    report: pytest.CollectReport = yield
    if _on_ci() and report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped on CI (CI=true requires every real part): {reason}"
    return report
