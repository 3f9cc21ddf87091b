"""`engine="ray"`: the same re-scoring on Ray Data, for archives that outgrow one machine.

```python
rescore(paths, ["quote_verification"], "scores.jsonl", engine="ray", ray_address="auto")
```

Three stages, each a Ray Data operator:

1. read: one task per file streams it through the readers and emits one row per (record, trace):
   the trace's spans in that record, pickled, keyed by `order_key(trace_id)`; and one row of
   read counters per file;
2. group: a sort by key (Ray's sort-based shuffle) brings every fragment of a trace together,
   wherever and in whatever order the files held them; `map_batches` over whole sorted blocks
   (a key never straddles two blocks after the sort: the rule `map_groups` relies on, without
   its per-trace call) assembles each trace once (`trace_turns`: the local engine's code:
   incomplete traces counted, evaluation spans left out, gold answers attached, resumed turns
   skipped) and encodes its turns once, with pydantic's compiled JSON encoder;
3. score: `map_batches` tasks (at most `workers` at a time) score the turns in chunks with the
   evaluators built once per Ray worker process and run (no actor process started per run); a
   trace's scores travel as JSON beside its turns, which pass through unchanged.

Results stream back to the driver, which parses turns and scores with pydantic's compiled JSON
parser (one call per trace) and writes OUT (the same writers and `--resume` path as the
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
import uuid
from collections.abc import Collection, Iterator, Sequence
from typing import Any, Final

from pydantic import TypeAdapter
from typing_extensions import TypedDict

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


def _assemble_blocks(
    batch: dict[str, Any],
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
) -> dict[str, list[Any]]:
    """Ray `map_batches` function over whole blocks of the key-sorted rows: each trace's
    fragments (consecutive rows of one key; the sort keeps a key within one block, the rule
    `map_groups` itself relies on) -> one row of its turns and counters; counters rows pass.

    One call per block rather than one per trace (`map_groups`): Ray's per-group slicing and
    batch conversion cost more than assembling the trace (see docs/offline.md, "Ray").
    """
    keys, data = batch["key"], batch["data"]
    out: dict[str, list[Any]] = {"kind": [], "payload": [], "turns": []}
    start = 0
    for end in range(1, len(keys) + 1):
        if end < len(keys) and keys[end] == keys[start]:
            continue
        if str(keys[start]) == _STATS_KEY:
            for item in data[start:end]:
                out["kind"].append("stats")
                out["payload"].append(bytes(item).decode())
                out["turns"].append(b"[]")
        else:
            counters, turns = _assemble_trace(list(data[start:end]), expected, skip)
            out["kind"].append("trace")
            out["payload"].append(counters)
            out["turns"].append(turns)
        start = end
    return out


def _assemble_trace(
    data: list[bytes],
    expected: ExpectedAnswers | None,
    skip: Collection[tuple[str, str]],
) -> tuple[str, bytes]:
    """One trace's fragments -> its counters (JSON) and its turns (JSON, pydantic's encoder)."""
    fragments = [decode_fragment(bytes(d)) for d in data]
    merged = merge_fragments(fragments)  # a span read twice (Collector retry) is kept once
    spans, left_out = split_evaluations(merged)
    counts = TurnCounts(
        evaluation_spans=len(left_out),
        duplicate_spans=sum(map(len, fragments)) - len(merged),
    )
    matched_before = expected.matched if expected is not None else 0
    turns = list(trace_turns(spans, counts, expected=expected, skip=skip, absent=left_out))
    counters = {
        "counts": {name: getattr(counts, name) for name in _TURN_COUNTERS},
        "incomplete": counts.incomplete,
        "matched": (expected.matched - matched_before) if expected is not None else 0,
    }
    return json.dumps(counters), _TURNS.dump_json(turns)


class _Scored(TypedDict):
    """One turn's scores, as they travel from a scoring actor to the driver."""

    scores: list[Score]
    durations: dict[str, float]


_TURNS: Final = TypeAdapter(list[RagTurn])
"""Turns to and from JSON in pydantic's own (compiled) encoder and parser: one call per trace."""
_SCORES: Final = TypeAdapter(list[_Scored])
"""A trace's turns' scores to and from JSON, likewise."""


_EVALUATORS: dict[str, list[Any]] = {}
"""In each Ray worker process: the evaluators of the run it scores for, by run id (one run)."""


def _evaluators(run: str, spec: Any) -> list[Any]:
    """The run's evaluators, built once per worker process and run (the previous run's are
    dropped): what a scoring actor held, without starting an actor process for every run."""
    found = _EVALUATORS.get(run)
    if found is None:
        _EVALUATORS.clear()
        found = _EVALUATORS[run] = list(resolve_evaluators(spec))
    return found


def _score_batch(batch: dict[str, Any], run: str, spec: Any, concurrency: int) -> dict[str, Any]:
    """Ray `map_batches` function: score every turn of the batch's rows in one chunk, adding a
    `scores` column.

    The turns column passes through as it came (the driver reads the turns from it): a turn is
    encoded once, by the task that assembled it.
    """
    evaluators = _evaluators(run, spec)
    per_row = [_TURNS.validate_json(bytes(turns)) for turns in batch["turns"]]
    results = iter(score_chunk([t for row in per_row for t in row], evaluators, concurrency))
    scores: list[bytes] = []
    for row in per_row:
        done = [next(results) for _ in row]
        scores.append(
            _SCORES.dump_json(
                [{"scores": list(r.scores.values()), "durations": r.durations} for r in done]
            )
        )
    return {
        "kind": batch["kind"],
        "payload": batch["payload"],
        "turns": batch["turns"],
        "scores": scores,
    }


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
        read.sort("key")
        .map_batches(
            _assemble_blocks,
            fn_kwargs={"expected": expected, "skip": skip},
            batch_size=None,  # whole blocks: a key never straddles two after the sort
            batch_format="numpy",
        )
        .repartition(target_num_rows_per_block=chunk_size * _BLOCK_CHUNKS)
        .materialize()
    )
    return traces.map_batches(
        _score_batch,
        fn_kwargs={"run": uuid.uuid4().hex, "spec": spec, "concurrency": concurrency},
        batch_size=chunk_size,
        compute=ray.data.TaskPoolStrategy(size=max(1, workers)),
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
    rows = zip(batch["kind"], batch["payload"], batch["turns"], batch["scores"], strict=True)
    for kind, payload, turns, scores in rows:
        row = json.loads(payload)
        if kind == "stats":
            _add_read_counters(summary, row)
            continue
        _add_turn_counters(summary, row)
        scored = _SCORES.validate_json(bytes(scores))
        for turn, item in zip(_TURNS.validate_json(bytes(turns)), scored, strict=True):
            by_name = {score.name: score for score in item["scores"]}
            results.append(TurnResult(turn, by_name, item["durations"]))
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
