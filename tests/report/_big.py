"""A report of many turns (100,000 by default): the demo's sample turns, scored by the real
quote evaluators once, repeated with their own trace ids; the report keeps only the worst."""

from __future__ import annotations

import itertools
from pathlib import Path

from groundwire import evaluate_many
from groundwire.demo import sample_turns
from groundwire.evaluators import QuotedSpans, QuoteVerification
from groundwire.offline._results import TurnResult
from groundwire.offline.writers import HtmlReportWriter

__all__ = ["write_big_report"]


def write_big_report(path: Path, turns: int = 100_000) -> Path:
    """Write a `turns`-turn HTML report to `path`."""
    samples = sample_turns()
    scored = evaluate_many(samples, [QuotedSpans(), QuoteVerification(embedder=None)])
    writer = HtmlReportWriter(path, ["quoted_spans", "quote_verification"])
    pairs = itertools.cycle(zip(samples, scored, strict=True))
    for index, (turn, scores) in zip(range(turns), pairs, strict=False):
        ids = {"trace_id": f"{index:032x}", "span_id": f"{index:016x}"}
        writer.write(TurnResult(turn.model_copy(update=ids), scores))
    writer.close()
    return path
