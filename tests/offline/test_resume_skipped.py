"""`--resume` scores again the turns a dead judge skipped (`judge_unreachable`), in every format.

A run against a judge that is down finishes fast with the judge evaluations `skipped`; once the
judge is back, resuming takes those records out of OUT, scores their turns, and leaves every other
record byte for byte as it was, so OUT holds each turn once, all scored.
"""

from __future__ import annotations

import csv
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundwire import semconv
from groundwire._breaker import CircuitBreaker
from groundwire._evaluator import JUDGE_UNREACHABLE
from groundwire.evaluators.groundedness import ResponseGroundedness
from groundwire.evaluators.quoted_spans import QuotedSpans
from groundwire.judges import JudgeClient, JudgeConfig
from groundwire.offline import rescore
from groundwire.offline._resume import resume_state
from groundwire.testing import OpenAIServer, structured
from tests.offline._cli_files import write_turns

QUERIES = [f"What did note {i} say about engines?" for i in range(6)]
NAMES = ["quoted_spans", "groundedness"]


@pytest.fixture
def refusing() -> Iterator[socket.socket]:
    """A loopback port that refuses every connection (bound, not listening)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    yield sock
    sock.close()


def _evaluators(base_url: str) -> list[Any]:
    """quoted_spans plus a groundedness judge at `base_url` that gives up after 2 refusals."""
    config = JudgeConfig(
        model="judge-model",
        base_url=base_url,
        api_key="k",
        backoff_base_s=0.01,
        backoff_max_s=0.02,
        max_retries=0,
        timeout_s=5.0,
        cache="off",
    )
    breaker = CircuitBreaker("judge", threshold=2, cooldown_s=60.0)
    return [QuotedSpans(), ResponseGroundedness(judge=JudgeClient(config, breaker=breaker))]


def _records(out: Path) -> list[dict[str, Any]]:
    """OUT's rows as `{trace_id, span_id, groundedness: (value, label, skip_reason)}`."""
    if out.suffix == ".jsonl":
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        return [
            {
                "key": (r["trace_id"], r["span_id"]),
                "value": r["scores"]["groundedness"],
                "label": r["details"]["groundedness"]["label"],
                "skip": (r["details"]["groundedness"]["details"] or {}).get("skip_reason"),
            }
            for r in rows
        ]
    if out.suffix == ".csv":
        table = list(csv.DictReader(out.open(encoding="utf-8", newline="")))
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(out).to_pylist()
    records = []
    for row in table:
        details = json.loads(row["details"])["groundedness"]
        value = row["groundedness"]
        records.append(
            {
                "key": (row["trace_id"], row["span_id"]),
                "value": float(value) if value not in ("", None) else None,
                "label": row["groundedness.label"] or None,
                "skip": (details["details"] or {}).get("skip_reason"),
            }
        )
    return records


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_resume_scores_again_what_a_dead_judge_skipped(
    suffix: str, refusing: socket.socket, tmp_path: Path
) -> None:
    """Down: judge evaluations skipped (`judge_unreachable`). Back up, `--resume` scores exactly
    those turns again; OUT then holds each turn once, and the other rows are unchanged."""
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    traces = write_turns(QUERIES, tmp_path / "t.jsonl")
    out = tmp_path / f"scores{suffix}"
    port = refusing.getsockname()[1]
    rescore(traces, _evaluators(f"http://127.0.0.1:{port}/v1"), out, concurrency=1)
    first = _records(out)
    skipped = {r["key"] for r in first if r["skip"] == JUDGE_UNREACHABLE}
    assert len(first) == len(QUERIES)
    assert len(skipped) >= 4, first  # the breaker opened after the first refusals
    assert all(
        r["label"] == semconv.LABEL_SKIPPED and r["value"] is None
        for r in first
        if r["key"] in skipped
    )
    kept_before = [r for r in first if r["key"] not in skipped]
    lines_before = out.read_bytes().splitlines(keepends=True) if suffix != ".parquet" else []

    refusing.close()
    with OpenAIServer(structured({"rating": 2}), port=port) as server:
        summary = rescore(traces, _evaluators(server.base_url), out, resume=True, concurrency=1)

    assert summary.counts.resumed == len(QUERIES) - len(skipped)
    assert any(
        f"{len(skipped)} turn" in note and JUDGE_UNREACHABLE in note
        for note in summary.resume_notes
    )
    second = _records(out)
    assert sorted(r["key"] for r in second) == sorted(r["key"] for r in first)  # each turn once
    assert [r for r in second if r["key"] not in skipped] == kept_before
    assert all(r["value"] == 1.0 and r["skip"] is None for r in second if r["key"] in skipped)
    if suffix != ".parquet":  # rows kept by the rewrite are byte for byte the earlier ones
        text = out.read_bytes()
        kept_lines = [
            line for line in lines_before if not any(k[0].encode() in line for k in skipped)
        ]
        assert text.startswith(b"".join(kept_lines))


def test_a_resume_with_nothing_skipped_leaves_out_untouched(tmp_path: Path) -> None:
    """No skipped turn: OUT is not rewritten (same inode and bytes) and every key is done."""
    traces = write_turns(QUERIES, tmp_path / "t.jsonl")
    out = tmp_path / "scores.jsonl"
    rescore(traces, ["quoted_spans"], out)
    before = out.read_bytes(), out.stat().st_ino
    state = resume_state(out, ["quoted_spans"])
    assert (out.read_bytes(), out.stat().st_ino) == before
    assert state.rows == len(QUERIES) and state.rescored == 0 and state.notes == []
