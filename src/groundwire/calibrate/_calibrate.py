"""`calibrate`: every judge-versus-human agreement a labels file allows, and the annotators' own.

For each judge run (one scores file, or one `--judge` configuration), each labelled evaluator
and each annotator, one `Agreement`; where the scores carry the dual judge's two ratings
(`Score.details["ratings"]`, as `groundedness` writes them), each prompt alone as well as their
mean. Where two annotators labelled the same turns, their own kappa is the ceiling a judge can
be expected to reach (`Ceiling`).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from groundwire import semconv
from groundwire.calibrate import _stats as stats
from groundwire.calibrate._agreement import (
    CATEGORIES,
    Agreement,
    Figure,
    Pair,
    agreement,
    figure,
)
from groundwire.calibrate._labels import LabelsError, LabelSet
from groundwire.calibrate._scores import Match, ScoredTurn, Unmatched, join

__all__ = ["CalibrationReport", "Ceiling", "calibrate"]

MEAN_PROMPT = "mean"
"""`Agreement.prompt` of the dual judge's combined score."""


@dataclass(frozen=True, slots=True)
class Ceiling:
    """Two annotators' agreement on the turns both labelled: what a judge can hope to reach."""

    evaluator: str
    annotators: tuple[str, str]
    n: int
    kappa: Figure
    weighting: str
    accuracy: Figure


@dataclass(slots=True)
class CalibrationReport:
    """Everything `groundwire calibrate` reports."""

    labels: str
    agreements: list[Agreement] = field(default_factory=list)
    ceilings: list[Ceiling] = field(default_factory=list)
    unmatched: list[Unmatched] = field(default_factory=list)
    matched: int = 0


def _value(match: Match, prompt: str | None) -> float | None:
    """The judge's value for this label: the score, or one prompt's rating / 2."""
    score = match.turn.scores[match.label.evaluator]
    if prompt is not None and prompt != MEAN_PROMPT:
        rating = score.details.get("ratings", {}).get(prompt)
        if isinstance(rating, int | float) and not isinstance(rating, bool):
            return float(rating) / 2
        return None
    if score.value is None or math.isnan(score.value):
        return None
    return score.value


def _pair(match: Match, value: float) -> Pair:
    """A joined label as a `Pair` carrying what the disagreement list shows."""
    turn, label = match.turn, match.label
    return Pair(
        label=label.value,
        value=value,
        trace_id=turn.trace_id,
        span_id=turn.span_id,
        query=turn.query,
        answer=turn.answer,
        contexts=turn.contexts,
        explanation=turn.scores[label.evaluator].explanation,
        where=label.where,
    )


def _prompts(matches: Sequence[Match]) -> list[str | None]:
    """[None] for a plain score; ["mean", *prompts] when the scores carry per-prompt ratings."""
    names: dict[str, None] = {}
    for match in matches:
        ratings = match.turn.scores[match.label.evaluator].details.get("ratings")
        if isinstance(ratings, dict):
            names.update(dict.fromkeys(str(name) for name in ratings))
    return [MEAN_PROMPT, *names] if names else [None]


def _made_by(matches: Sequence[Match]) -> dict[str, list[str]]:
    """Every judge model and prompt hash the matched scores name."""
    seen: dict[str, dict[str, None]] = {}
    for match in matches:
        details = match.turn.scores[match.label.evaluator].details
        for key, detail in (
            (semconv.GROUNDWIRE_JUDGE_MODEL, semconv.DETAIL_JUDGE_MODEL),
            (semconv.GROUNDWIRE_JUDGE_PROMPT_VERSION, semconv.DETAIL_PROMPT_VERSION),
        ):
            value = details.get(detail)
            if isinstance(value, str) and value:
                seen.setdefault(key, {})[value] = None
    return {key: list(values) for key, values in seen.items()}


def _tokens(turns: Sequence[ScoredTurn], evaluator: str) -> int | None:
    """Judge tokens the run spent on `evaluator` (None when no score reports usage)."""
    usages = [t.scores[evaluator].usage for t in turns if evaluator in t.scores]
    if not any(usages):
        return None
    return sum(sum(usage.values()) for usage in usages)


def _run_agreements(
    labels: LabelSet, judge: str | None, turns: Sequence[ScoredTurn], options: dict[str, int]
) -> tuple[list[Agreement], list[Match], list[Unmatched]]:
    """The agreements of one judge run, with the labels it matched and did not."""
    joined = join(labels, turns)
    rows: list[Agreement] = []
    for evaluator, scale in labels.scales.items():
        for annotator in labels.annotators:
            matches = [
                m
                for m in joined.matched
                if m.label.evaluator == evaluator and m.label.annotator == annotator
            ]
            for prompt in _prompts(matches) if matches else []:
                values = [(m, _value(m, prompt)) for m in matches]
                pairs = [_pair(m, v) for m, v in values if v is not None]
                if not pairs:
                    continue
                rows.append(
                    agreement(
                        evaluator,
                        scale,
                        pairs,
                        **options,
                        prompt=prompt,
                        judge=judge,
                        annotator=annotator,
                        tokens=_tokens(turns, evaluator),
                        unscored=len(values) - len(pairs),
                        made_by=_made_by(matches),
                    )
                )
    return rows, joined.matched, joined.unmatched


def _ceilings(labels: LabelSet, resamples: int, seed: int) -> list[Ceiling]:
    """Kappa between each two annotators on the turns both labelled, per evaluator."""
    out: list[Ceiling] = []
    named = [a for a in labels.annotators if a is not None]
    for evaluator, scale in labels.scales.items():
        if scale == "continuous":
            continue
        mine = [label for label in labels.labels if label.evaluator == evaluator]
        by = {a: {lab.key: lab.value for lab in mine if lab.annotator == a} for a in named}
        for first, second in itertools.combinations(named, 2):
            common = sorted(set(by[first]) & set(by[second]))
            if len(common) < 2:
                continue
            samples = (
                np.array([by[first][key] for key in common], dtype=np.int64),
                np.array([by[second][key] for key in common], dtype=np.int64),
            )
            quadratic = scale == "ordinal"
            kappa = functools.partial(
                stats.cohen_kappa, k=len(CATEGORIES[scale]), quadratic=quadratic
            )
            indices = stats.resample_indices(len(common), resamples, seed)
            out.append(
                Ceiling(
                    evaluator=evaluator,
                    annotators=(first, second),
                    n=len(common),
                    kappa=figure(kappa, samples, indices),
                    weighting="quadratic" if quadratic else "none",
                    accuracy=figure(stats.accuracy, samples, indices),
                )
            )
    return out


def calibrate(
    labels: LabelSet,
    runs: Mapping[str | None, Sequence[ScoredTurn]],
    *,
    resamples: int = stats.RESAMPLES,
    seed: int = 0,
    disagreements: int = 20,
) -> CalibrationReport:
    """Join `labels` with each judge run's scored turns and measure their agreement.

    `runs` maps a judge name (None for a scores file) to its turns. A `LabelsError` when no
    label matches any scored turn: there is nothing to measure, and the reasons are listed.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    options = {"resamples": resamples, "seed": seed, "disagreements": disagreements}
    report = CalibrationReport(labels=labels.source)
    unmatched: dict[str, Unmatched] = {}
    matched: set[str] = set()
    for judge, turns in runs.items():
        rows, hits, misses = _run_agreements(labels, judge, turns, options)
        report.agreements += rows
        matched.update(hit.label.where for hit in hits)
        for miss in misses:
            unmatched.setdefault(miss.label.where, miss)
    report.unmatched = [miss for where, miss in unmatched.items() if where not in matched]
    report.matched = len(matched)
    if not matched:
        reasons = "; ".join(sorted({miss.reason for miss in report.unmatched})[:3])
        raise LabelsError(
            f"{labels.source}: no label matches a scored turn ({len(report.unmatched)} labels; "
            f"{reasons})"
        )
    report.ceilings = _ceilings(labels, resamples, seed)
    return report
