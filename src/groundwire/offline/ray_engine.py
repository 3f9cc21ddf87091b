"""`engine="ray"`: the same re-scoring on Ray Data, for archives that outgrow one machine.

```python
rescore(paths, ["quote_verification"], "scores.jsonl", engine="ray", ray_address="auto")
```

A dataset of file paths is `flat_map`ped through the streaming reader and assembler (one task per
file, so a trace split across two files is not joined: rotate files on trace boundaries or merge
them first), turns are scored by `map_batches` with the evaluators built once per Ray actor, and
the results stream back to the driver, which writes OUT and exports telemetry exactly like the
local engine. Each file task also emits one row of read counters for the summary.

Ray connects to `address` when given, else to `RAY_ADDRESS` when set, else starts a local
instance (what CI uses). Install with `pip install 'groundwire[ray]'`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn, Score
from groundwire.offline._pipeline import TurnCounts, WindowOptions, iter_turns
from groundwire.offline._results import TurnResult
from groundwire.offline._scoring import score_chunk
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import Problems, ReadStats, TraceFormat

if TYPE_CHECKING:
    from groundwire.offline.rescore import RescoreSummary, StopFlag

__all__ = ["score_with_ray"]

_COUNTERS = ("files", "records", "spans", "bad_records", "other_records", "bytes_done")
_TURN_COUNTERS = (
    "traces",
    "turns",
    "resumed",
    "forced_traces",
    "late_spans",
    "evaluation_spans",
    "evaluation_logs",
)


def _ray() -> Any:
    """The `ray` module with Ray Data, or ImportError naming the extra to install."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ImportError(
            "engine='ray' needs Ray Data: pip install 'groundwire[ray]' (or 'ray[data]>=2.9')"
        ) from None
    return ray


class _ReadFile:
    """Ray `flat_map` function: one file path row -> one row per turn, then one counters row."""

    def __init__(
        self,
        fmt: TraceFormat | None,
        strict: bool,
        window: WindowOptions,
        expected: ExpectedAnswers | None,
        skip: Collection[tuple[str, str]],
    ) -> None:
        self.fmt, self.strict, self.window = fmt, strict, window
        self.expected, self.skip = expected, skip

    def __call__(self, row: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Stream the file's turns (as JSON) and finish with its counters."""
        stats = ReadStats()
        counts = TurnCounts()
        problems = Problems(strict=self.strict, stats=stats)
        turns = iter_turns(
            [row["path"]],
            problems,
            counts,
            fmt=self.fmt,
            window=self.window,
            expected=self.expected,
            skip=self.skip,
        )
        for turn in turns:
            yield {"kind": "turn", "payload": turn.to_json()}
        counters = {name: getattr(stats, name) for name in _COUNTERS}
        counters.update({name: getattr(counts, name) for name in _TURN_COUNTERS})
        counters["matched"] = self.expected.matched if self.expected is not None else 0
        yield {"kind": "stats", "payload": json.dumps(counters)}


class _Score:
    """Ray `map_batches` class: builds the evaluators once per actor, scores turn rows."""

    def __init__(self, spec: Any, concurrency: int) -> None:
        self.evaluators = resolve_evaluators(spec)
        self.concurrency = concurrency

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Score the batch's turn rows; counters rows pass through unchanged."""
        kinds = list(batch["kind"])
        payloads = list(batch["payload"])
        turns = [
            RagTurn.from_json(payload)
            for kind, payload in zip(kinds, payloads, strict=True)
            if kind == "turn"
        ]
        results = iter(score_chunk(turns, self.evaluators, self.concurrency))
        out = []
        for kind, payload in zip(kinds, payloads, strict=True):
            out.append(_result_json(next(results)) if kind == "turn" else payload)
        return {"kind": kinds, "payload": out}


def _result_json(result: TurnResult) -> str:
    """A TurnResult as JSON text (Ray rows hold strings; no Arrow schema for nested details)."""
    return json.dumps(
        {
            "turn": result.turn.model_dump(mode="json"),
            "scores": [score.model_dump(mode="json") for score in result.scores.values()],
            "durations": result.durations,
        }
    )


def _result_from_json(text: str) -> TurnResult:
    """The TurnResult `_result_json` wrote."""
    data = json.loads(text)
    scores = [Score.model_validate(score) for score in data["scores"]]
    return TurnResult(
        RagTurn.model_validate(data["turn"]),
        {score.name: score for score in scores},
        data["durations"],
    )


def _init(ray: Any, address: str | None) -> bool:
    """Connect (or start local Ray); True when this call started it and must shut it down."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    ray.init(address=address, include_dashboard=False, logging_level="WARNING")
    return True


def score_with_ray(
    paths: Sequence[str | os.PathLike[str]],
    spec: Any,
    summary: RescoreSummary,
    *,
    fmt: TraceFormat | None,
    strict: bool,
    window: WindowOptions,
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
    concurrency: int,
    chunk_size: int,
    workers: int,
    address: str | None,
    stop: StopFlag,
) -> Iterator[list[TurnResult]]:
    """Yield scored chunks computed on Ray; read counters are added to `summary` as they come."""
    ray = _ray()
    started_here = _init(ray, address)
    try:
        paths_ds = ray.data.from_items([{"path": os.fspath(path)} for path in paths])
        turns = paths_ds.flat_map(_ReadFile(fmt, strict, window, expected, skip))
        scored = turns.map_batches(
            _Score,
            fn_constructor_args=(spec, concurrency),
            batch_size=chunk_size,
            concurrency=max(1, workers),
            batch_format="numpy",
        )
        for batch in scored.iter_batches(batch_size=chunk_size, batch_format="numpy"):
            results: list[TurnResult] = []
            for kind, payload in zip(batch["kind"], batch["payload"], strict=True):
                if kind == "stats":
                    _add_counters(summary, json.loads(payload))
                else:
                    results.append(_result_from_json(str(payload)))
            if results:
                yield results
            if stop.is_set():
                return
        stop.input_exhausted = True
    finally:
        if started_here:
            ray.shutdown()


def _add_counters(summary: RescoreSummary, counters: dict[str, int]) -> None:
    """Add one file's read and turn counters to the run's summary."""
    for name in _COUNTERS:
        setattr(summary.read, name, getattr(summary.read, name) + counters.get(name, 0))
    for name in _TURN_COUNTERS:
        setattr(summary.counts, name, getattr(summary.counts, name) + counters.get(name, 0))
    summary.expected_matched += counters.get("matched", 0)
