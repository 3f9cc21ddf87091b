"""`engine="ray"`: the same re-scoring on Ray Data, for archives that outgrow one machine.

```python
rescore(paths, ["quote_verification"], "scores.jsonl", engine="ray", ray_address="auto")
```

Three stages, each a Ray Data operator:

1. read: one task per file streams it through the readers and emits one row per (record, trace):
   the trace's spans in that record, pickled, keyed by `order_key(trace_id)`; and one row of
   read counters per file;
2. group: `groupby(key).map_groups` brings every fragment of a trace together, wherever and in
   whatever order the files held them, and assembles the whole trace once (`trace_turns`: the
   local engine's code: incomplete traces counted, evaluation spans left out, gold answers
   attached, resumed turns skipped);
3. score: `map_batches` scores the turns in chunks with the evaluators built once per Ray actor
   (`workers` actors).

Results stream back to the driver, which writes OUT (the same writers and `--resume` path as the
local engine) and exports telemetry. The shuffle sorts by key and the order is preserved, so the
output order is `order_key` (a CRC-32 of the trace id, then the id): the local engine's order for
several files, whatever the split of the spans into files and the order of the files.

Ray connects to `address` when given, else to `RAY_ADDRESS` when set, else starts a local
instance (what CI uses). Install with `pip install 'groundwire[ray]'`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from groundwire._registry import resolve_evaluators
from groundwire._types import RagTurn, Score
from groundwire.offline._grouping import (
    decode_fragment,
    encode_fragment,
    fragments,
    merge_fragments,
    order_key,
)
from groundwire.offline._pipeline import TurnCounts, split_evaluations, trace_turns
from groundwire.offline._results import TurnResult
from groundwire.offline._scoring import score_chunk
from groundwire.offline._stopping import StopFlag
from groundwire.offline._summary import RescoreSummary
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import BadRecordError, Problems, ReadStats, TraceFormat, read_file

__all__ = ["RayEngineError", "score_with_ray"]

_READ_COUNTERS = (
    "files",
    "records",
    "spans",
    "bad_records",
    "other_records",
    "bytes_done",
    "log_records",
    "damaged_files",
)
_TURN_COUNTERS = (
    "traces",
    "turns",
    "resumed",
    "evaluation_spans",
    "evaluation_logs",
    "duplicate_spans",
    "duplicate_turns",
    "parent_missing",
)
_BLOCK_CHUNKS = 4
"""Traces per block handed to a scoring actor, in chunks: small blocks spread the work over all
actors even when the shuffle made few blocks (one file gives one)."""
_STATS_KEY = ""
"""The group key of the per-file counters rows (sorts before every trace key)."""


class RayEngineError(RuntimeError):
    """The Ray job failed (a node lost for good, tasks out of retries): what was written stays."""


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
    """Ray `flat_map` function: one file path row -> one row per (record, trace), then counters."""

    def __init__(self, fmt: TraceFormat | None, strict: bool) -> None:
        self.fmt, self.strict = fmt, strict

    def __call__(self, row: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Stream the file's span fragments keyed by trace, and finish with its counters."""
        stats = ReadStats()
        problems = Problems(strict=self.strict, stats=stats)
        path = row["path"]
        try:
            for batch in read_file(path, problems, fmt=self.fmt):
                for trace_id, spans in fragments(batch.spans).items():
                    yield {"key": order_key(trace_id), "data": encode_fragment(spans)}
        except OSError as error:
            problems.report(str(path), f"cannot read the file: {error.strerror or error}")
        except ValueError as error:
            if isinstance(error, BadRecordError):
                raise
            problems.report(str(path), str(error))
        counters = {name: getattr(stats, name) for name in _READ_COUNTERS}
        yield {"key": _STATS_KEY, "data": json.dumps(counters).encode()}


def _assemble_group(
    group: dict[str, Any],
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
) -> dict[str, Any]:
    """Ray `map_groups` function: a trace's fragments -> one row of its turns and counters."""
    key = str(group["key"][0])
    if key == _STATS_KEY:
        return {
            "kind": ["stats"] * len(group["data"]),
            "payload": [d.decode() for d in group["data"]],
        }
    fragments = [decode_fragment(d) for d in group["data"]]
    merged = merge_fragments(fragments)  # a span read twice (Collector retry) is kept once
    spans, left_out = split_evaluations(merged)
    counts = TurnCounts(
        evaluation_spans=len(left_out),
        duplicate_spans=sum(map(len, fragments)) - len(merged),
    )
    matched_before = expected.matched if expected is not None else 0
    turns = list(trace_turns(spans, counts, expected=expected, skip=skip, absent=left_out))
    payload = {
        "turns": [turn.to_json() for turn in turns],
        "counts": {name: getattr(counts, name) for name in _TURN_COUNTERS},
        "incomplete": counts.incomplete,
        "matched": (expected.matched - matched_before) if expected is not None else 0,
    }
    return {"kind": ["trace"], "payload": [json.dumps(payload)]}


class _Score:
    """Ray `map_batches` class: builds the evaluators once per actor, scores the traces' turns."""

    def __init__(self, spec: Any, concurrency: int) -> None:
        self.evaluators = resolve_evaluators(spec)
        self.concurrency = concurrency

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        """Score every turn of the batch's trace rows in one chunk; counters rows pass through."""
        kinds = [str(kind) for kind in batch["kind"]]
        rows = [json.loads(payload) for payload in batch["payload"]]
        turns = [
            RagTurn.from_json(turn)
            for kind, row in zip(kinds, rows, strict=True)
            if kind == "trace"
            for turn in row["turns"]
        ]
        results = iter(score_chunk(turns, self.evaluators, self.concurrency))
        out: list[str] = []
        for kind, row in zip(kinds, rows, strict=True):
            if kind == "trace":
                row["results"] = [_result_json(next(results)) for _ in row.pop("turns")]
            out.append(json.dumps(row))
        return {"kind": kinds, "payload": out}


def _result_json(result: TurnResult) -> dict[str, Any]:
    """A TurnResult as JSON-ready data (Ray rows hold strings; no Arrow schema for details)."""
    return {
        "turn": result.turn.model_dump(mode="json"),
        "scores": [score.model_dump(mode="json") for score in result.scores.values()],
        "durations": result.durations,
    }


def _result_from_json(data: dict[str, Any]) -> TurnResult:
    """The TurnResult `_result_json` wrote."""
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


def _plan(
    ray: Any,
    paths: Sequence[str | os.PathLike[str]],
    spec: Any,
    *,
    fmt: TraceFormat | None,
    strict: bool,
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
    concurrency: int,
    chunk_size: int,
    workers: int,
) -> Any:
    """The dataset of scored trace rows (read -> group by trace -> assemble -> score).

    The grouped traces are cut into small blocks and materialized before scoring starts: the sort
    is a barrier anyway, and scoring actors started earlier would hold the CPUs that the read,
    shuffle and re-blocking tasks need (a deadlock when `workers` equals the cluster's CPUs).
    """
    files = [{"path": os.fspath(path)} for path in paths]
    read = ray.data.from_items(files, override_num_blocks=len(files)).flat_map(
        _ReadFile(fmt, strict)
    )
    traces = (
        read.groupby("key")
        .map_groups(
            _assemble_group, fn_kwargs={"expected": expected, "skip": skip}, batch_format="numpy"
        )
        .repartition(target_num_rows_per_block=chunk_size * _BLOCK_CHUNKS)
        .materialize()
    )
    return traces.map_batches(
        _Score,
        fn_constructor_args=(spec, concurrency),
        batch_size=chunk_size,
        compute=ray.data.ActorPoolStrategy(size=max(1, workers)),
        batch_format="numpy",
    )


def score_with_ray(
    paths: Sequence[str | os.PathLike[str]],
    spec: Any,
    summary: RescoreSummary,
    *,
    fmt: TraceFormat | None,
    strict: bool,
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
    concurrency: int,
    chunk_size: int,
    workers: int,
    address: str | None,
    stop: StopFlag,
) -> Iterator[list[TurnResult]]:
    """Yield scored chunks computed on Ray, in `order_key` order; counters go to `summary`."""
    ray = _ray()
    from ray.data.context import DataContext, ShuffleStrategy

    started_here = _init(ray, address)
    data_logger = logging.getLogger("ray.data")
    data_level = data_logger.level
    data_logger.setLevel(max(data_level, logging.WARNING))
    context = DataContext.get_current()
    saved = (
        context.execution_options.preserve_order,
        context.shuffle_strategy,
        context.enable_progress_bars,
    )
    context.execution_options.preserve_order = True
    context.shuffle_strategy = ShuffleStrategy.SORT_SHUFFLE_PULL_BASED
    context.enable_progress_bars = False
    try:
        batches: Iterator[dict[str, Any]] | None = None
        while True:
            try:
                if batches is None:
                    scored = _plan(
                        ray,
                        paths,
                        spec,
                        fmt=fmt,
                        strict=strict,
                        expected=expected,
                        skip=skip,
                        concurrency=concurrency,
                        chunk_size=chunk_size,
                        workers=workers,
                    )
                    batches = iter(scored.iter_batches(batch_size=chunk_size, batch_format="numpy"))
                batch = next(batches)
            except StopIteration:
                break
            except Exception as error:
                if isinstance(error, BadRecordError) or not _from_ray(error):
                    raise
                raise RayEngineError(
                    f"the Ray job failed: {type(error).__name__}: {error}. The output holds "
                    "every turn written before the failure; run again with --resume "
                    "(resume=True) to score the rest"
                ) from error
            results = _decode(batch, summary)
            if results:
                yield results
            if stop.is_set():
                return
        stop.input_exhausted = True
    finally:
        (
            context.execution_options.preserve_order,
            context.shuffle_strategy,
            context.enable_progress_bars,
        ) = saved
        data_logger.setLevel(data_level)
        if started_here:
            ray.shutdown()


def _decode(batch: dict[str, Any], summary: RescoreSummary) -> list[TurnResult]:
    """One batch of Ray's rows: read counters and turn counters go to `summary`, the turns'
    results are returned."""
    results: list[TurnResult] = []
    for kind, payload in zip(batch["kind"], batch["payload"], strict=True):
        row = json.loads(payload)
        if kind == "stats":
            _add_read_counters(summary, row)
        else:
            _add_turn_counters(summary, row)
            results.extend(_result_from_json(data) for data in row["results"])
    return results


def _from_ray(error: BaseException) -> bool:
    """True for an error raised by Ray itself (a lost node, a failed task), not our own code."""
    return any(kind.__module__.split(".")[0] == "ray" for kind in type(error).__mro__)


def _add_read_counters(summary: RescoreSummary, counters: dict[str, int]) -> None:
    """Add one file's read counters to the run's summary."""
    for name in _READ_COUNTERS:
        setattr(summary.read, name, getattr(summary.read, name) + counters.get(name, 0))


def _add_turn_counters(summary: RescoreSummary, row: dict[str, Any]) -> None:
    """Add one trace's counters (turns, incomplete reasons, gold answers) to the summary."""
    counts = summary.counts
    for name in _TURN_COUNTERS:
        setattr(counts, name, getattr(counts, name) + row["counts"].get(name, 0))
    for reason, number in row["incomplete"].items():
        counts.incomplete[reason] = counts.incomplete.get(reason, 0) + number
    summary.expected_matched += row["matched"]
