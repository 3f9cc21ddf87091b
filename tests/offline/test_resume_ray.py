"""`--resume` on the Ray engine: the same torn-record repair as the local engine (one function)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundwire.offline import rescore
from tests.offline._traces import record_turns, write_groundwire_jsonl

pytest.importorskip("ray", reason="the ray extra (ray[data]) is not installed")

from tests.offline.test_ray import local_ray  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.mark.usefixtures("local_ray")
def test_ray_resume_drops_a_torn_line_and_a_torn_row_group(tmp_path: Path) -> None:
    """Ray engine: a torn .jsonl line and a torn .parquet row group are dropped; no turn twice."""
    import pyarrow.parquet as pq

    traces = write_groundwire_jsonl(record_turns(8), tmp_path / "t.jsonl", batch=3)
    out = tmp_path / "o.jsonl"
    rescore(traces, ["quoted_spans"], out)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:5]) + lines[5][:40])
    summary = rescore(traces, ["quoted_spans"], out, resume=True, engine="ray")
    assert any("dropped a torn last line (40 bytes" in note for note in summary.resume_notes)
    assert (summary.counts.resumed, summary.turns_scored) == (5, 3)
    keys = [(r["trace_id"], r["span_id"]) for r in map(json.loads, out.read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 8

    table = tmp_path / "o.parquet"
    rescore(traces, ["quoted_spans"], table)
    parts = tmp_path / "o.partial.parquet"
    parts.mkdir()
    (parts / "part-00000.parquet.tmp").write_bytes(table.read_bytes()[:64])
    summary = rescore(traces, ["quoted_spans"], table, resume=True, engine="ray")
    assert any("dropped a torn row group (64 bytes" in note for note in summary.resume_notes)
    assert (summary.counts.resumed, summary.turns_scored) == (8, 0)
    assert pq.read_table(table).num_rows == 8 and not parts.exists()
