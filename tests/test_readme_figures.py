"""The README's benchmark figures are generated from the results files, not typed."""

from __future__ import annotations

from tests.benchmarks import readme


def test_readme_benchmark_table_matches_the_results_files() -> None:
    """README.md's table equals what tests/benchmarks/readme.py builds from results/*.json."""
    text = readme.README.read_text()
    assert readme.current(text) == readme.table(), (
        "README.md's benchmark table is stale: run `python -m tests.benchmarks.readme`"
    )


def test_every_results_file_the_table_reads_exists() -> None:
    """Each row builder finds its results file (a renamed benchmark fails here, not in CI later)."""
    for build in readme.BUILDERS:
        name, result, target = build()
        assert name and result and target
