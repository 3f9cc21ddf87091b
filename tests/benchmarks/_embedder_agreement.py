"""How far a fast embedder's cosines agree with e5's, on our own quote set (issue 34).

Part of the quote verification benchmark. The quote set is the quote fidelity benchmark's: quotes
cut from the licence texts Debian ships (verbatim, with typos, a changed number, negation, modal
verb or name; see tests/benchmarks/bench_quote_fidelity.py). `verify_quotes` runs on all of them
three times, from an empty embedding cache each time: with the default e5 embedder, with the
fast one, and without an embedder. Reported: which rows got a cosine, the Spearman rank
correlation of the two embedders' cosines over the quotes both computed (overall and per kind),
their largest and mean absolute difference, whether any verdict (`low_confidence`, its reason)
differs between the three runs, the time of each run, and each embedder's texts per CPU second
on the compared quotes and spans (a quote and its span per call; e5 on the first 200 texts).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from scipy.stats import spearmanr

from groundwire.embeddings import EMBEDDING_CACHE, Embedder
from groundwire.evaluators.quote_verification import QuoteMatch, verify_quotes
from tests.benchmarks import bench_quote_fidelity as fidelity

__all__ = ["agreement", "markdown"]

SPEED_TEXTS = 200
"""Texts the default embedder's speed is measured on (the fast one takes them all)."""


def _run(
    quotes: list[str], documents: dict[str, str], embedder: Embedder | None
) -> tuple[float, list[QuoteMatch]]:
    """Seconds and rows of one `verify_quotes` call, from an empty cache, model loaded first."""
    if embedder is not None:
        embedder.embed(["warm up"])  # the model's load time is not the embedding time
    EMBEDDING_CACHE.clear()
    started = time.perf_counter()
    rows = verify_quotes(quotes, documents, embedder=embedder)
    return time.perf_counter() - started, rows


def _verdicts(rows: list[QuoteMatch]) -> list[tuple[bool, str | None]]:
    """What no embedder may change."""
    return [(row.low_confidence, row.low_confidence_reason) for row in rows]


def _rho(left: list[float], right: list[float]) -> float | None:
    """Spearman's rank correlation (None under 3 pairs)."""
    if len(left) < 3:
        return None
    return float(spearmanr(left, right).statistic)


def _speed(embedder: Embedder, texts: list[str]) -> float:
    """Texts per CPU second, embedding a quote and its span per call (as a turn does)."""
    started = time.process_time()
    for at in range(0, len(texts), 2):
        embedder.embed(texts[at : at + 2])
    return len(texts) / max(time.process_time() - started, 1e-9)


def agreement(default: Embedder, fast: Embedder, fast_name: str) -> dict[str, Any]:
    """Run the three settings on the quote fidelity quote set; see the module docstring."""
    documents = fidelity.load_documents()
    cases = fidelity.make_cases(documents)
    quotes = [case.quote for case in cases]
    none_s, none_rows = _run(quotes, documents, None)
    default_s, default_rows = _run(quotes, documents, default)
    fast_s, fast_rows = _run(quotes, documents, fast)
    both = [
        (case.kind, a.cosine_similarity, b.cosine_similarity)
        for case, a, b in zip(cases, default_rows, fast_rows, strict=True)
        if a.cosine_similarity is not None
        and b.cosine_similarity is not None
        and a.quote.split() != a.span_text.split()  # the model's cosines, not the 1.0 shortcut
    ]
    per_kind: dict[str, Any] = {}
    for kind in fidelity.KINDS:
        pairs = [(a, b) for k, a, b in both if k == kind]
        per_kind[kind] = {
            "n": len(pairs),
            "spearman": _rho([a for a, _ in pairs], [b for _, b in pairs]),
        }
    left, right = [a for _, a, _ in both], [b for _, _, b in both]
    both_texts = [
        text
        for row in default_rows
        if row.cosine_similarity is not None and row.quote.split() != row.span_text.split()
        for text in (row.quote.strip(), row.span_text)
    ]
    differences = [abs(a - b) for a, b in zip(left, right, strict=True)]
    embedded = len(both)
    return {
        "quotes": len(quotes),
        "fast_embedder": fast_name,
        "compared": embedded,
        "spearman": _rho(left, right),
        "per_kind": per_kind,
        "max_abs_difference": max(differences, default=0.0),
        "mean_abs_difference": statistics.fmean(differences) if differences else 0.0,
        "median_cosine": {
            "default": statistics.median(left) if left else None,
            "fast": statistics.median(right) if right else None,
        },
        "verdicts_equal": _verdicts(none_rows) == _verdicts(default_rows) == _verdicts(fast_rows),
        "seconds": {"no embedder": none_s, "default": default_s, "fast": fast_s},
        "texts_per_s": {
            "default": _speed(default, both_texts[:SPEED_TEXTS]),
            "fast": _speed(fast, both_texts),
        },
    }


def markdown(r: dict[str, Any]) -> list[str]:
    """The agreement paragraph and table of the results page."""
    rho = r["spearman"]
    rates = r["texts_per_s"]
    lines = [
        f"Fast embedder `{r['fast_embedder']}` against the default e5, on the quote fidelity "
        f"benchmark's {r['quotes']} licence-text quotes (`verify_quotes` with the default "
        f"`cosine='fuzzy'`; the {r['compared']} quotes embedded by both, verbatim spans aside): "
        f"Spearman {rho:.2f} overall, absolute difference mean {r['mean_abs_difference']:.3f}, "
        f"max {r['max_abs_difference']:.3f} (median cosine e5 {r['median_cosine']['default']:.3f},"
        f" fast {r['median_cosine']['fast']:.3f}); verdicts "
        + ("identical in the three runs" if r["verdicts_equal"] else "**differ**")
        + f". Speed: e5 {rates['default']:.0f} texts per CPU second, fast "
        f"{rates['fast']:,.0f} "
        f"({rates['fast'] / rates['default']:.0f}x); whole call "
        f"{r['seconds']['default']:.1f} s with e5, {r['seconds']['fast']:.2f} s with the fast "
        f"embedder, {r['seconds']['no embedder']:.2f} s without.",
        "",
        "| kind | quotes compared | Spearman |",
        "|---|---:|---:|",
    ]
    for kind, entry in r["per_kind"].items():
        value = "-" if entry["spearman"] is None else f"{entry['spearman']:.2f}"
        lines.append(f"| {kind} | {entry['n']} | {value} |")
    return [*lines, ""]
