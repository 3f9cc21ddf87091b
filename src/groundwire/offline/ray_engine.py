"""`engine="ray"`: the same re-scoring on Ray, for archives that outgrow one machine.

```python
rescore(paths, ["quote_verification"], "scores.jsonl", engine="ray", ray_address="auto")
```

Three stages, all plain Ray tasks the driver submits (Ray Data ran its tasks about one at a time
on the two-node cluster, and its sort was a barrier of its own):

1. read (`_ray_reads`): one task per file streams it through the readers and cuts each record's
   spans into fragments, one per trace, pickled, keyed by `order_key(trace_id)`, into key ranges
   (the key's leading CRC-32 scaled: equal ranges, in key order), putting them in Ray's object
   store a range at a time every 32 MB; then it hands back the file's read counters;
2. group and assemble (`_ray_scoring`): once every read has ended (a trace's last span may be
   in the last file), a range's first scoring task takes that range's pieces from every read
   task, sorts them by key (stable: the files' order kept within a trace) and assembles each
   trace once (`trace_turns`: the local engine's code: incomplete traces counted, evaluation
   spans left out, gold answers attached, resumed turns skipped) and encodes its turns once,
   with pydantic's compiled JSON encoder; in the scoring task itself, so a scoring slot never
   waits for an assemble task;
3. score: that task scores the range (when there are 4 ranges a worker or more), or its first
   slice of at most 4 chunks and hands the assembled table on to a task per other slice; at most
   `workers` tasks at a time, submitted by the driver in key order, the next one as soon as a
   slot is free; each scores its turns in chunks with the evaluators built once per Ray worker
   process and run (no actor process started per run); a trace's scores travel as JSON beside
   its turns, which pass through unchanged.
   The tasks (`_ray_stages`) are in their own module; this one plans and drives the job.

Results stream back to the driver, which parses turns and scores with pydantic's compiled JSON
parser (one call per trace) and writes OUT (the same writers and `--resume` path as the
local engine) and exports telemetry. A `.parquet` OUT with no export and no results hook is
written by the scoring tasks themselves instead (`parts`, see `_ray_parts`): one whole part
file per 4 chunks of traces, only counters and tallies come back to the driver. A `.jsonl` or `.csv`
OUT with no export and no hook is encoded by the scoring tasks (`_ray_lines`): each task's lines
come back as one byte string, which the driver appends to OUT as it is (no turn or score
decoded). The ranges are in key order and each is sorted by key, so the output order is
`order_key` (a CRC-32 of the trace id, then the id): the local engine's order for several
files, whatever the split of the spans into files and the order of the files.

Ray connects to `address` when given, else to `RAY_ADDRESS` when set, else starts a local
instance (what CI uses); an address where nothing answers raises `RayAddressError` within
seconds. A read's `BadRecordError` (with `strict`) and `FormatMismatchError` reach the caller as
they are, as on the local engine (`_ray_reads.read_ranges`). Without `strict`, a read's bad-record
messages come back with its counters and go to the run's `Problems` (its `on_problem`, else
stderr) in the files' order, with the local engine's text (the first 1,000 of a file, then one
line counting the rest).
Install with `pip install 'groundwire[ray]'`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import socket
import uuid
from collections.abc import Collection, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from groundwire.offline._ray_lines import EncodedOutput, LinesPlace
from groundwire.offline._ray_parts import PartsOutput, PartsPlace, add_part_tallies
from groundwire.offline._ray_reads import READ_COUNTERS, ReadRanges
from groundwire.offline._ray_scoring import score_blocks
from groundwire.offline._ray_stages import SCORES, TURN_COUNTERS, TURNS
from groundwire.offline._results import TurnResult
from groundwire.offline._stopping import StopFlag
from groundwire.offline._summary import RescoreSummary
from groundwire.offline.expected import ExpectedAnswers
from groundwire.offline.readers import BadRecordError, Problems, TraceFormat

__all__ = ["RayAddressError", "RayEngineError", "score_with_ray"]


class RayEngineError(RuntimeError):
    """The Ray job failed (a node lost for good, tasks out of retries): what was written stays."""


class RayAddressError(ValueError):
    """The Ray cluster to use cannot be reached: nothing was read or scored. A ValueError, as a
    bad argument is (the `rescore` command exits 2 with this one line)."""


def _ray() -> Any:
    """The `ray` module (pyarrow, for the tables between stages, checked too), or ImportError
    naming the extra to install."""
    missing = importlib.util.find_spec("ray") is None
    if missing or importlib.util.find_spec("pyarrow") is None:
        raise ImportError(
            "engine='ray' needs Ray and pyarrow: pip install 'groundwire[ray]' "
            "(or 'ray[data]>=2.9')"
        )
    import ray

    return ray


def _init(ray: Any, address: str | None) -> bool:
    """Connect (or start local Ray); True when this call started it and must shut it down.

    A cluster that cannot be reached ends the run with `RayAddressError` (one line naming the
    address) within `_REACH_S`: `ray.init` itself retries an address where nothing answers for
    minutes, then exits the process from inside Ray (SystemExit(15), 2 minutes measured).
    """
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        _check_reachable(address)
    try:
        ray.init(address=address, include_dashboard=False, logging_level="WARNING")
    except ConnectionError as error:  # e.g. "auto" and no cluster started on this machine
        where = address or "a new local Ray"
        raise RayAddressError(f"cannot connect to the Ray cluster at {where}: {error}") from None
    except SystemExit as error:  # Ray gave up on an address that answered (not Ray's, or down)
        raise RayAddressError(
            f"cannot connect to the Ray cluster at {address}: Ray gave up (exit {error.code})"
        ) from None
    return True


_REACH_S: Final = 10.0
"""How long the check of a cluster's address waits for its port to answer."""


def _check_reachable(address: str) -> None:
    """Raise `RayAddressError` when nothing answers at `address`'s host and port (a TCP
    connection, at most `_REACH_S`); addresses without one (`auto`, `local`) are left to Ray.
    Ray's own connect timeouts (`RAY_gcs_rpc_server_connect_timeout_s` and the others) are not
    changed: they also rule how long a run waits for a head node that restarts mid-job."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not port.isdigit():
        return
    host = host.strip("[]") or "127.0.0.1"
    try:
        with socket.create_connection((host, int(port)), timeout=_REACH_S):
            pass
    except OSError as error:
        timed_out = isinstance(error, TimeoutError)
        reason = f"no answer in {_REACH_S:.0f} s" if timed_out else error.strerror or error
        raise RayAddressError(
            f"cannot reach the Ray cluster at {address} ({reason}): "
            "start it (`ray start --head`) or give its address with --ray-address or "
            "RAY_ADDRESS (ray_address= in Python)"
        ) from None


@dataclass(frozen=True, slots=True)
class _Job:
    """What one run asks of Ray: the files, the evaluators and the options of `score_with_ray`."""

    paths: list[str]
    spec: Any
    fmt: TraceFormat | None
    strict: bool
    expected: ExpectedAnswers | None
    skip: Collection[tuple[str, str]]
    concurrency: int
    chunk_size: int
    workers: int
    parts: PartsPlace | LinesPlace | None
    """Where (or how) the workers write OUT's rows themselves; None: they travel to the driver."""


def _scored(ray: Any, job: _Job, problems: Problems) -> Generator[dict[str, Any], None, None]:
    """Each file's read counters (once every read has ended; its bad records' messages handed
    to `problems` first), then each slice's scored rows, in `order_key` order (see `_ray_reads`
    and `_ray_scoring`)."""
    reads = ReadRanges(ray, job.paths, fmt=job.fmt, strict=job.strict)
    for counters in reads.counters():
        for text in counters.pop("problems", ()):
            problems.relay(text)  # counted by the read already: in `counters`
        row = {"kind": "stats", "payload": json.dumps(counters), "turns": b"[]", "scores": b"[]"}
        yield {name: [value] for name, value in row.items()}
    yield from score_blocks(
        ray,
        reads.take(),
        context=(job.expected, job.skip),
        run=uuid.uuid4().hex,
        spec=job.spec,
        concurrency=job.concurrency,
        parts=job.parts,
        chunk_size=job.chunk_size,
        workers=job.workers,
        range_count=reads.ranges,
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
    parts: PartsOutput | EncodedOutput | None = None,
    problems: Problems | None = None,
) -> Iterator[list[TurnResult]]:
    """Yield scored chunks computed on Ray, in `order_key` order; counters go to `summary`,
    bad records' messages to `problems` (as the local engine's reads report them; default:
    printed to stderr).

    With `parts`, the workers write OUT's rows themselves (Parquet part files, `PartsOutput`)
    or encode them for the driver to copy (`.jsonl`/`.csv`, `EncodedOutput`), and the chunks
    are empty (yielded as the counters arrive, for progress and stop requests).
    """
    job = _Job(
        [os.fspath(path) for path in paths],
        spec,
        fmt=fmt,
        strict=strict,
        expected=expected,
        skip=skip,
        concurrency=concurrency,
        chunk_size=chunk_size,
        workers=workers,
        parts=parts.place if parts is not None else None,
    )
    ray = _ray()
    started_here = _init(ray, address)
    try:
        relay = problems if problems is not None else Problems(stats=summary.read)
        yield from _stream(ray, job, summary, stop, parts, relay)
    finally:
        if started_here:
            ray.shutdown()


def _stream(
    ray: Any,
    job: _Job,
    summary: RescoreSummary,
    stop: StopFlag,
    parts: PartsOutput | EncodedOutput | None,
    problems: Problems,
) -> Iterator[list[TurnResult]]:
    """Plan the job, then stream its rows back block by block (see `score_with_ray`); the
    scoring tasks still running are cancelled when the run stops early."""
    batches = _scored(ray, job, problems)
    with contextlib.closing(batches):
        while True:
            try:
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
            lines = parts if isinstance(parts, EncodedOutput) else None
            results = _decode(batch, summary, lines)
            if results or parts is not None:
                yield results
            if stop.is_set():
                return
    stop.input_exhausted = True


def _decode(
    batch: dict[str, Any], summary: RescoreSummary, lines: EncodedOutput | None = None
) -> list[TurnResult]:
    """One batch of Ray's rows: read counters and turn counters go to `summary`, a part's
    encoded rows to `lines`, the turns' results are returned."""
    results: list[TurnResult] = []
    rows = zip(batch["kind"], batch["payload"], batch["turns"], batch["scores"], strict=True)
    for kind, payload, turns, scores in rows:
        row = json.loads(payload)
        if kind == "stats":
            _add_read_counters(summary, row)
            continue
        if kind == "part":
            if lines is not None:
                lines.write_encoded(bytes(turns))
            add_part_tallies(summary, row)
            continue
        _add_turn_counters(summary, row)
        scored = SCORES.validate_json(bytes(scores))
        for turn, item in zip(TURNS.validate_json(bytes(turns)), scored, strict=True):
            by_name = {score.name: score for score in item["scores"]}
            results.append(TurnResult(turn, by_name, item["durations"]))
    return results


def _from_ray(error: BaseException) -> bool:
    """True for an error raised by Ray itself (a lost node, a failed task), not our own code."""
    return any(kind.__module__.split(".")[0] == "ray" for kind in type(error).__mro__)


def _add_read_counters(summary: RescoreSummary, counters: dict[str, int]) -> None:
    """Add one file's read counters to the run's summary."""
    for name in READ_COUNTERS:
        setattr(summary.read, name, getattr(summary.read, name) + counters.get(name, 0))


def _add_turn_counters(summary: RescoreSummary, row: dict[str, Any]) -> None:
    """Add one trace's counters (turns, incomplete reasons, gold answers) to the summary."""
    counts = summary.counts
    for name in TURN_COUNTERS:
        setattr(counts, name, getattr(counts, name) + row["counts"].get(name, 0))
    for reason, number in row["incomplete"].items():
        counts.incomplete[reason] = counts.incomplete.get(reason, 0) + number
    summary.expected_matched += row["matched"]
