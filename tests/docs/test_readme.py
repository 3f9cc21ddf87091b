"""README.md says what the project's files say: the `.[all]` comment lists the `all` extra."""

from __future__ import annotations

import re
import tomllib

from tests.docs._markdown import ROOT


def test_the_all_extra_comment_names_every_extra_it_installs() -> None:
    """`pip install -e ".[all]"  # core + ...` names exactly the extras `all` pulls in."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (spec,) = project["project"]["optional-dependencies"]["all"]
    extras = re.search(r"\[(.*)\]", spec)
    assert extras is not None
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    comment = re.search(r'pip install -e "\.\[all\]" +# core \+ (.*)', readme)
    assert comment is not None
    assert [name.strip() for name in comment.group(1).split(",")] == extras.group(1).split(",")
