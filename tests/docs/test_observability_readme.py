"""examples/observability/README.md's commands run from where its steps leave the reader."""

from __future__ import annotations

import re
import shlex

from tests.docs._markdown import ROOT, blocks

README = "examples/observability/README.md"


def test_every_script_path_exists_from_the_folder_step_1_cds_into() -> None:
    """Step 1 does `cd examples/observability`; each `python X` after it names a file there."""
    where = ROOT
    checked = 0
    for block in blocks(README, "bash"):
        for line in block.text.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["cd"]:
                where = where / words[1]
            elif words[:1] == ["python"]:
                assert (where / words[1]).is_file(), f"{line!r} run in {where}"
                checked += 1
    assert checked >= 1 and re.search(r"\bcd examples/observability\b", (ROOT / README).read_text())
