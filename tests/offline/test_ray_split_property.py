"""Property: a recorded trace file cut into 1 to 6 parts at random lines, read in random order,
gives exactly the rows of the unsplit run on the local engine, with `workers=2`, and on Ray."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundwire.offline import rescore
from tests.offline._traces import record_turns, write_groundwire_jsonl

SPEC = {"quoted_spans": {}, "quote_verification": {"embedder": None}}
TURNS = 9


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str]]:
    """The recorded file's lines (2 spans a line: traces straddle lines) and its unsplit rows."""
    folder = tmp_path_factory.mktemp("property")
    path = write_groundwire_jsonl(record_turns(TURNS), folder / "all.jsonl", batch=2)
    out = folder / "unsplit.jsonl"
    assert rescore(path, SPEC, out).turns_scored == TURNS
    return path.read_text().splitlines(keepends=True), sorted(out.read_text().splitlines())


@st.composite
def splits(draw: st.DrawFn, lines: int) -> tuple[list[int], list[int]]:
    """Cut points (0 to 5 distinct inner line numbers) and a random order of the parts."""
    cuts = sorted(draw(st.sets(st.integers(1, lines - 1), max_size=5)))
    order = draw(st.permutations(range(len(cuts) + 1)))
    return cuts, list(order)


def _write_parts(lines: list[str], cuts: list[int], order: list[int], folder: Path) -> list[Path]:
    """The parts as files, named by their position in the original, listed in `order`."""
    bounds = [0, *cuts, len(lines)]
    parts = []
    for index, (start, end) in enumerate(itertools.pairwise(bounds)):
        part = folder / f"part-{index}.jsonl"
        part.write_text("".join(lines[start:end]))
        parts.append(part)
    return [parts[index] for index in order]


def _rows(paths: list[Path], out: Path, **options: object) -> list[str]:
    """The output rows of one run, in file order."""
    rescore(paths, SPEC, out, **options)  # type: ignore[arg-type]
    return out.read_text().splitlines()


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_local_engine_gives_the_unsplit_rows_on_any_split(
    recorded: tuple[list[str], list[str]], data: st.DataObject
) -> None:
    """Local engine, one and two workers: the unsplit rows, in one order whatever the split."""
    lines, unsplit = recorded
    cuts, order = data.draw(splits(len(lines)))
    with tempfile.TemporaryDirectory(prefix="gwsplit") as name:
        folder = Path(name)
        parts = _write_parts(lines, cuts, order, folder)
        one = _rows(parts, folder / "one.jsonl")
        assert sorted(one) == unsplit
        if len(parts) > 1:
            two = _rows(list(reversed(parts)), folder / "two.jsonl", workers=2)
            assert two == one, "several files: same rows in the same order"


ray = pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")


@pytest.fixture(scope="module")
def module_ray() -> Iterator[None]:
    """One local Ray for the module's examples."""
    from tests.offline._ray_local import local_ray

    with local_ray(ray):
        yield


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_ray_engine_gives_the_local_rows_on_any_split(
    module_ray: None, recorded: tuple[list[str], list[str]], data: st.DataObject
) -> None:
    """Ray: the unsplit rows, row for row (same order) as the local engine on the same parts."""
    lines, unsplit = recorded
    cuts, order = data.draw(splits(len(lines)))
    with tempfile.TemporaryDirectory(prefix="gwsplit") as name:
        folder = Path(name)
        parts = _write_parts(lines, cuts, order, folder)
        on_ray = _rows(parts, folder / "ray.jsonl", engine="ray")
        assert sorted(on_ray) == unsplit
        local = _rows(parts, folder / "local.jsonl")
        if len(parts) > 1:
            assert on_ray == local, "Ray and the local engine: same rows in the same order"
