"""The judge and model the docs' snippets talk to, and the files they name."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

from groundwire.testing import Reply, structured
from tests.offline._cli_files import write_turns

JUDGE_ENV = {
    "GROUNDWIRE_JUDGE_MODEL": "judge-1",
    "GROUNDWIRE_JUDGE_API_KEY": "test-key",
    "OPENAI_API_KEY": "test-key",
}
"""With the server's URL as GROUNDWIRE_JUDGE_BASE_URL and OPENAI_BASE_URL: a configured judge."""


def model_reply(request: Any) -> Reply:
    """The judge and model behind every snippet: each structured request gets a valid answer
    of the shape it asked for (a rating, claims, an audit verdict)."""
    asked = json.dumps(request)
    if "AuditReply" in asked:
        return structured(
            {
                "verdict": "partially_supported",
                "supporting_phrase": "Paris has about 2.1 million residents",
                "missing": "the exact figure of 2 million",
                "basis": "The span gives about 2.1 million, not 2 million.",
            }
        )(request)
    if "ClaimList" in asked:
        return structured({"claims": ["Paris has 2 million people [1]."]})(request)
    return structured({"rating": 2})(request)


def judge_env(base_url: str) -> dict[str, str]:
    """The variables that point the judges and OpenAI clients at the server at `base_url`."""
    return {**JUDGE_ENV, "GROUNDWIRE_JUDGE_BASE_URL": base_url, "OPENAI_BASE_URL": base_url}


def write_named_files(folder: Path) -> None:
    """The files the pages name: trace files (plain, gzip, in folders), gold answers."""
    plain = write_turns([f"question {i}" for i in range(4)], folder / "traces.jsonl")
    packed = gzip.compress(plain.read_bytes())
    (folder / "traces.jsonl.gz").write_bytes(packed)
    (folder / "big.jsonl.gz").write_bytes(packed)
    (folder / "traces").mkdir()
    (folder / "traces" / "app-1.jsonl.gz").write_bytes(packed)
    (folder / "otel-traces").mkdir()
    shutil.copy(plain, folder / "otel-traces" / "traces-2026-11-01.jsonl")
    shutil.copy(plain, folder / "groundwire-telemetry.jsonl")
    gold = [{"query": "question 0", "expected": ["blue"]}]
    (folder / "gold.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
