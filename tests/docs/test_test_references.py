"""Every test docs/reliability.md names exists: a guarantee is only as good as its test.

The page cites tests as `tests/offline/test_cli.py::test_x`, as `test_cli.py::test_x` (a file
of that name under tests/), and as `::test_y` (the file cited last). Each must name a test
function defined in that file (parametrised ids left out).
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs._markdown import ROOT

_CITE = re.compile(r"(?:(tests/[\w/]+\.py|\b\w+\.py))?::(\w+)|(tests/[\w/]+\.py)")


def _files(name: str) -> list[Path]:
    """Test files a citation names: its path, or every file of that name under tests/."""
    if name.startswith("tests/"):
        return [ROOT / name]
    return sorted((ROOT / "tests").rglob(name))


def _defines(path: Path, test: str) -> bool:
    """True when `path` defines the test function `test`."""
    return re.search(rf"^\s*(?:async )?def {test}\(", path.read_text(), re.M) is not None


def test_every_test_the_reliability_page_cites_exists() -> None:
    """Each cited file exists, and each cited test is defined in it."""
    text = (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")
    missing: list[str] = []
    last: list[Path] = []
    checked = 0
    for match in _CITE.finditer(text):
        file_only = match.group(3)
        if file_only:
            if not _files(file_only)[0].is_file():
                missing.append(file_only)
            continue
        name, test = match.group(1), match.group(2)
        files = _files(name) if name else last
        last = files if name else last
        checked += 1
        if not any(path.is_file() and _defines(path, test) for path in files):
            missing.append(f"{name or '(previous file)'}::{test}")
    assert checked > 40
    assert not missing, f"docs/reliability.md cites tests that do not exist: {missing}"
