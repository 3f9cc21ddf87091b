"""docs/assembly.md's first snippet runs as pasted and prints what its comment says."""

from __future__ import annotations

import contextlib
import io

from tests.docs._markdown import blocks


def test_the_first_snippet_builds_a_turn_and_scores_it() -> None:
    """Run in a fresh namespace: it makes its own exporter, and the turn scores 1.0."""
    snippet = blocks("docs/assembly.md", "python")[0]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(snippet.text, f"docs/assembly.md:{snippet.line}", "exec"), {})
    assert printed.getvalue() == "What is the capital of France? 1.0\n"
