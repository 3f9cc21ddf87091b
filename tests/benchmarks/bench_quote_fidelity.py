"""Quote fidelity: are meaning-changing misquotes refused, and harmless slips still verified?

Source text: the licence texts Debian ships in /usr/share/common-licenses (package base-files):
GPL-2, GPL-3, LGPL-2.1, Apache-2.0, MPL-2.0, GFDL-1.3, Artistic and CC0-1.0. Their terms
permit verbatim copying (the GPL's preamble: "Everyone is permitted to copy and distribute
verbatim copies of this license document, but changing it is not allowed"). The benchmark only
reads them at run time: quotes are cut and altered in memory, and neither the texts nor any
altered quote is stored in the repository or in the results. It is not the demo corpus.

Quotes of 8 to 24 words are cut at word boundaries, then:
- `verbatim`: left as they are;
- `typo`: one random letter edit (substitute, delete, insert, swap) per ~60 characters, on
  letters only (a changed digit is a changed number, not a typo);
- `number`: a numeral or number word changed (digits +1..+9, words to another number word);
- `negation`: a negator dropped ("not", "never", "no", "n't") or inverted ("without" -> "with",
  "cannot" -> "can", "nor" -> "or", "neither" -> "either");
- `modal`: a modal verb flipped (may <-> must, shall -> may, should -> may, can -> must, will ->
  may, ...);
- `name`: a capitalised word that does not start a sentence swapped for another capitalised word
  of the corpus (e.g. a defined term such as "Program" for "Library").

Each quote runs through `verify_quotes` with `meaning_check=False` (today's ratio-only verdict,
"before") and with the default meaning check ("after"), no embedder. Per kind: the share refused
(`verified` False) and verified. Time: the same quotes in one call each side, the same warm-up,
the order alternating, median of RUNS with min and max; the ratio is after / before, in CPU
time of the process (wall time is reported beside it).

Run: `python -m tests.benchmarks quote_fidelity`. Writes results/quote_fidelity.{md,json}.
"""

from __future__ import annotations

import json
import platform
import random
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundwire.evaluators.quote_verification import QuoteMatch, verify_quotes
from tests.benchmarks._misquote import typos as _typos
from tests.benchmarks._timing import results_dir, scaled

RESULTS = results_dir()
LICENSES = Path("/usr/share/common-licenses")
FILES = ("GPL-2", "GPL-3", "LGPL-2.1", "Apache-2.0", "MPL-2.0", "GFDL-1.3", "Artistic", "CC0-1.0")
SEED = 20261124
PER_KIND = scaled(150, 5)
RUNS = scaled(7, 1)
KINDS = ("verbatim", "typo", "number", "negation", "modal", "name")
ALTERED = ("number", "negation", "modal", "name")
_WORD = re.compile(r"\S+")
_NUMBER_WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "twenty",
    "thirty",
    "hundred",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
]
_NEGATIONS = {
    "not": "",
    "never": "",
    "no": "",
    "without": "with",
    "cannot": "can",
    "nor": "or",
    "neither": "either",
}
_MODALS = {
    "may": "must",
    "must": "may",
    "shall": "may",
    "should": "may",
    "can": "must",
    "could": "must",
    "will": "may",
    "would": "may",
    "might": "must",
}


@dataclass(frozen=True, slots=True)
class Case:
    """One quote and how it was made."""

    kind: str
    quote: str


def load_documents() -> dict[str, str]:
    """The licence texts by name (raises when the Debian directory is missing)."""
    if not LICENSES.is_dir():
        raise SystemExit(f"{LICENSES} is missing: this benchmark needs Debian's base-files")
    return {name: (LICENSES / name).read_text(encoding="utf-8") for name in FILES}


def _cut(rng: random.Random, text: str) -> str:
    """A quote of 8 to 24 whole words from the text (no line of dashes or list markers only)."""
    while True:
        words = list(_WORD.finditer(text))
        size = rng.randint(8, 24)
        first = rng.randrange(0, len(words) - size)
        start, end = words[first].start(), words[first + size - 1].end()
        quote = " ".join(text[start:end].split()).strip(".,;:()\"'")
        if sum(c.isalpha() for c in quote) > 0.6 * len(quote):
            return quote


def _replace_word(
    rng: random.Random, quote: str, change: Callable[[str, int], str | None]
) -> str | None:
    """The quote with one word changed by `change(word, index)` (None: no word qualifies).

    A word is dropped only inside the quote: dropping the first or last word leaves a shorter
    verbatim quote, which changes nothing."""
    words = quote.split(" ")
    options = [
        (i, new)
        for i, w in enumerate(words)
        if (new := change(w, i)) is not None and (new or 0 < i < len(words) - 1)
    ]
    if not options:
        return None
    index, new = rng.choice(options)
    words[index] = new
    return " ".join(w for w in words if w)


def _number(rng: random.Random, quote: str) -> str | None:
    """A numeral or number word changed."""

    def change(word: str, _: int) -> str | None:
        core = word.strip(".,;:()")
        if core.isdigit():
            return word.replace(core, str(int(core) + rng.randint(1, 9)))
        if core.lower() in _NUMBER_WORDS:
            other = rng.choice([w for w in _NUMBER_WORDS if w != core.lower()])
            return word.replace(core, other)
        return None

    return _replace_word(rng, quote, change)


def _negation(rng: random.Random, quote: str) -> str | None:
    """A negator dropped or inverted."""

    def change(word: str, _: int) -> str | None:
        core = word.strip(".,;:()").lower()
        if core in _NEGATIONS and word.strip(".,;:()").islower():
            return word.replace(core, _NEGATIONS[core]) if _NEGATIONS[core] else ""
        if core.endswith("n't") and core != "can't":
            return word.replace("n't", "")
        return None

    return _replace_word(rng, quote, change)


def _modal(rng: random.Random, quote: str) -> str | None:
    """A modal verb flipped."""

    def change(word: str, _: int) -> str | None:
        core = word.strip(".,;:()")
        return word.replace(core, _MODALS[core]) if core in _MODALS else None

    return _replace_word(rng, quote, change)


def _capitalised(documents: dict[str, str]) -> list[str]:
    """Capitalised words that follow a lower-case word at least three times in the corpus, and
    at least as often as they occur in lower case (names and defined terms, not sentence
    starts)."""
    found: Counter[str] = Counter()
    lower: Counter[str] = Counter()
    for text in documents.values():
        for match in re.finditer(r"(?<=[a-z,] )([A-Z][a-z]{3,})\b", text):
            found[match.group(1)] += 1
        lower.update(re.findall(r"\b[a-z]{4,}\b", text))
    return sorted(
        word for word, count in found.items() if count >= 3 and count >= lower[word.lower()]
    )


def _name(rng: random.Random, quote: str, names: list[str]) -> str | None:
    """A capitalised word after a lower-case one swapped for another capitalised word."""
    words = quote.split(" ")

    def change(word: str, index: int) -> str | None:
        core = word.strip(".,;:()\"'")
        if index == 0 or not words[index - 1][-1:].islower() or core not in names:
            return None
        other = rng.choice([n for n in names if n != core and n[:3] != core[:3]])
        return word.replace(core, other)

    return _replace_word(rng, quote, change)


def make_cases(documents: dict[str, str]) -> list[Case]:
    """PER_KIND quotes of each kind (an altered quote only when the corpus does not have it
    verbatim, whatever the case or spacing)."""
    rng = random.Random(SEED)
    texts = list(documents.values())
    names = _capitalised(documents)
    alter: dict[str, Callable[[str], str | None]] = {
        "verbatim": lambda q: q,
        "typo": lambda q: _typos(rng, q),
        "number": lambda q: _number(rng, q),
        "negation": lambda q: _negation(rng, q),
        "modal": lambda q: _modal(rng, q),
        "name": lambda q: _name(rng, q, names),
    }
    corpus = " ".join(" ".join(text.split()) for text in texts).casefold()
    cases: list[Case] = []
    for kind in KINDS:
        made = tries = 0
        while made < PER_KIND and tries < 200_000:
            tries += 1
            original = _cut(rng, rng.choice(texts))
            quote = alter[kind](original)
            if quote is None or (
                kind != "verbatim" and " ".join(quote.split()).casefold() in corpus
            ):
                continue  # unchanged, or the change left a quote the corpus has verbatim
            cases.append(Case(kind, quote))
            made += 1
    return cases


def _timed(
    quotes: list[str], documents: dict[str, str], meaning_check: bool
) -> tuple[float, float, list[QuoteMatch]]:
    """Wall and CPU seconds of one verify_quotes call over every quote, and its rows.

    verify_quotes runs in one thread, so CPU time is its cost; on a shared machine wall time
    also counts the time other jobs held the CPU."""
    wall, cpu = time.perf_counter(), time.process_time()
    rows = verify_quotes(quotes, documents, embedder=None, meaning_check=meaning_check)
    return time.perf_counter() - wall, time.process_time() - cpu, rows


def main() -> None:
    """Run the benchmark and write results/quote_fidelity.{md,json}."""
    documents = load_documents()
    cases = make_cases(documents)
    quotes = [case.quote for case in cases]
    for check in (False, True):  # warm-up, both sides
        _timed(quotes, documents, check)
    times: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    rows: dict[bool, list[QuoteMatch]] = {}
    for run in range(RUNS):
        for check in (False, True) if run % 2 == 0 else (True, False):
            seconds, cpu_seconds, rows[check] = _timed(quotes, documents, check)
            times[check].append(seconds)
            cpu[check].append(cpu_seconds)
    per_kind: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        index = [i for i, case in enumerate(cases) if case.kind == kind]
        entry: dict[str, Any] = {"n": len(index)}
        for label, check in (("before", False), ("after", True)):
            verified = sum(rows[check][i].verified for i in index)
            entry[f"verified_{label}"] = verified / len(index)
            entry[f"refused_{label}"] = 1 - verified / len(index)
        entry["found_as"] = dict(
            Counter(c.kind for i in index for c in rows[True][i].meaning_changes)
        )
        entry["refused_for_ratio_after"] = sum(
            1 for i in index if not rows[True][i].verified and not rows[True][i].meaning_changes
        ) / len(index)
        per_kind[kind] = entry
    before = statistics.median(cpu[False])
    after = statistics.median(cpu[True])
    result = {
        "source": {"directory": str(LICENSES), "files": list(FILES)},
        "chars": sum(len(t) for t in documents.values()),
        "quotes": len(quotes),
        "per_kind": per_kind,
        "time_s": {
            "before": {"median": before, "min": min(cpu[False]), "max": max(cpu[False])},
            "after": {"median": after, "min": min(cpu[True]), "max": max(cpu[True])},
            "ratio": after / before,
            "paired_ratios": [a / b for a, b in zip(cpu[True], cpu[False], strict=True)],
            "wall_before": {
                "median": statistics.median(times[False]),
                "min": min(times[False]),
                "max": max(times[False]),
            },
            "wall_after": {
                "median": statistics.median(times[True]),
                "min": min(times[True]),
                "max": max(times[True]),
            },
            "wall_ratio": statistics.median(times[True]) / statistics.median(times[False]),
            "runs": RUNS,
        },
        "python": platform.python_version(),
        "machine": platform.machine(),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "quote_fidelity.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / "quote_fidelity.md").write_text(_markdown(result))
    print(_markdown(result))


def _pct(value: float) -> str:
    """A share as a percentage."""
    return f"{100 * value:.1f}%"


def _markdown(result: dict[str, Any]) -> str:
    """The results as a Markdown page."""
    lines = [
        "# Quote fidelity benchmark",
        "",
        f"Source: {', '.join(result['source']['files'])} from {result['source']['directory']} "
        f"(Debian base-files; verbatim copying permitted), {result['chars']:,} characters. "
        f"{result['quotes']} quotes of 8-24 words, {PER_KIND} per kind, seed {SEED}. "
        "Generated by `python -m tests.benchmarks quote_fidelity` (see the module docstring).",
        "",
        "Before: `verify_quotes(..., meaning_check=False)` (ratio only, the behaviour before the "
        "meaning check). After: the default meaning check. No embedder.",
        "",
        "| kind | n | refused before | refused after | verified before | verified after |"
        " meaning changes found (after) | refused on ratio alone (after) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, entry in result["per_kind"].items():
        found = ", ".join(f"{k} {v}" for k, v in sorted(entry["found_as"].items())) or "-"
        lines.append(
            f"| {kind} | {entry['n']} | {_pct(entry['refused_before'])} | "
            f"{_pct(entry['refused_after'])} | {_pct(entry['verified_before'])} | "
            f"{_pct(entry['verified_after'])} | {found} | "
            f"{_pct(entry['refused_for_ratio_after'])} |"
        )
    t = result["time_s"]
    lines += [
        "",
        f"Time for all {result['quotes']} quotes in one call, median of {t['runs']} runs "
        "(min-max), same warm-up, order alternating. CPU time of the process (verify_quotes is "
        "single-threaded, so this is its cost); wall time beside it, which on this shared "
        "machine also counts the time other jobs held the CPU:",
        "",
        "| side | CPU median s | CPU min s | CPU max s | wall median s | wall min s | wall max s |",
        "|---|---|---|---|---|---|---|",
        f"| before (meaning_check=False) | {t['before']['median']:.3f} | "
        f"{t['before']['min']:.3f} | {t['before']['max']:.3f} | "
        f"{t['wall_before']['median']:.3f} | {t['wall_before']['min']:.3f} | "
        f"{t['wall_before']['max']:.3f} |",
        f"| after (meaning check) | {t['after']['median']:.3f} | {t['after']['min']:.3f} | "
        f"{t['after']['max']:.3f} | {t['wall_after']['median']:.3f} | "
        f"{t['wall_after']['min']:.3f} | {t['wall_after']['max']:.3f} |",
        "",
        f"**Ratio after / before (CPU): {t['ratio']:.2f}x** (target: at most 1.3x); wall time "
        f"{t['wall_ratio']:.2f}x. CPU, run by run "
        f"(each run times both sides back to back): median "
        f"{statistics.median(t['paired_ratios']):.2f}x, min {min(t['paired_ratios']):.2f}x, "
        f"max {max(t['paired_ratios']):.2f}x.",
        "",
        f"Python {result['python']} on {result['machine']}; the machine is shared with other "
        "jobs, so absolute times vary between runs more than the ratio does.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
