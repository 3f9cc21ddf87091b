"""The Ray engine's read stage and shuffle as plain Ray tasks: a task per file partitions its
trace fragments into key ranges as it reads; the task that assembles range i (its first
scoring task, `_ray_scoring`) takes range i from every read task. No Ray Data, no sort.

```python
reads = ReadRanges(ray, paths, fmt=None, strict=False)   # one task per file, started now
for counters in reads.counters():                        # every read ended: each file's
    ...                                                  # counters, in the files' order
for pieces in reads.take():                              # range 0, 1, ...: the object refs of
    ...                                                  # its pieces, files' order kept
```

Why: Ray Data ran the reads about one at a time on the two-node cluster (8 read tasks of ~0.07
CPU-seconds took 0.75 s), and its sort (sample, map and reduce tasks, then the sorted blocks
materialized) added ~0.25 s before any trace could be assembled: a serial part that a second
worker cannot shorten. Trace keys (`order_key`) start with a CRC-32 in hex, uniform over the
keys, so cutting the 32-bit range into `ranges` equal ranges gives ranges of about equal size,
and range order is key order: assembling range 0, 1, ... and sorting each range's fragments by
key gives the `order_key` order of the sort, with no sampling.

Memory: a read task streams its file through the readers (as before) and holds the pickled
fragments it read since its last flush, at most `_FLUSH_BYTES` (plus one record); each flush
puts one object per range in Ray's object store (spilled to disk when the store is full, as the
sort's blocks were), so the archive is held there, in pieces, until its ranges are assembled:
what the materialized sort held. The number of ranges grows with the input (`range_count`: about
`partition_count`'s 32 MB a range, 16 at least when there is 1 MB for each), so a task that
assembles holds one range.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

from groundwire.offline._grouping import encode_fragment, fragments, order_key, partition_count
from groundwire.offline._inputs import input_size
from groundwire.offline.readers import (
    BadRecordError,
    FormatMismatchError,
    Problems,
    ReadStats,
    TraceFormat,
    read_file,
    report_unreadable,
)

__all__ = [
    "READ_COUNTERS",
    "ReadRanges",
    "key_range",
    "raise_carried",
    "range_count",
    "read_ranges",
]

READ_COUNTERS: Final = (
    "files",
    "records",
    "spans",
    "bad_records",
    "other_records",
    "bytes_done",
    "log_records",
    "damaged_files",
)


_FLUSH_BYTES: Final = 32 * 1024 * 1024
"""Pickled fragments a read task holds at most before it puts them in the object store."""

_MIN_RANGES: Final = 16
"""Ranges at least (input allowing): scoring waits for the first range's assembling (1/16)."""

_SMALL_RANGE_SHARE: Final = 32
"""`partition_count`'s 32 MB a partition over this: the smallest range worth a task, 1 MB."""

_COMPRESSED: Final = (".gz", ".zst", ".zstd")


def range_count(paths: Sequence[str]) -> int:
    """How many key ranges the run's reads cut their fragments into: about 32 MB of input a
    range (`partition_count`, as the local engine's spill partitions; gzip and zstd counted 8x),
    and, to start scoring early, 16 at least where the input has 1 MB for each (so a small input
    is not cut into ranges of a trace or two, a task each)."""
    total = sum(input_size(path) for path in paths)
    compressed = any(Path(path).suffix.lower() in _COMPRESSED for path in paths)
    small = partition_count(total * _SMALL_RANGE_SHARE, compressed)  # ranges of ~1 MB
    return max(partition_count(total, compressed), min(_MIN_RANGES, small))


def key_range(key: str, ranges: int) -> int:
    """The range of an `order_key` (its leading CRC-32 scaled to `ranges`): ranges in key order."""
    return (int(key[:8], 16) * ranges) >> 32


def read_ranges(
    path: str,
    fmt: TraceFormat | None,
    strict: bool,
    ranges: int,
    flush_bytes: int = _FLUSH_BYTES,
) -> Iterator[Any]:
    """In a Ray task (a streaming generator): stream one file through the readers and yield its
    fragments, `ranges` objects each time `flush_bytes` of them are held and at the end (object
    i: a list of (order key, pickled spans) of range i, in read order), then the file's read
    counters (a JSON string).

    A damaged record is counted as by the local engine, and its message (file, line, reason:
    `Problems.report`'s text) travels back with the counters instead of being printed in the
    worker, for the driver to hand to the run's `Problems` (`Problems.relay`), so the caller's
    `on_problem` gets the local engine's messages: key `"problems"`, present only when the file
    had bad records. `Problems` passes on at most `MAX_FILE_MESSAGES` of a file, then one line
    counting the rest, on every engine: a file of a million bad lines sends a thousand lines, not
    a million, through the object store. The errors that end a local run end this read too, and
    travel as its last object instead of the counters (a JSON string `{"failed": ...}`, see
    `raise_carried`): `BadRecordError` with `strict`, and
    `FormatMismatchError` (a `fmt` the file's records contradict). Raised in the task, they
    would reach the driver as Ray's `RayTaskError`, or not at all (neither exception can be
    unpickled: their constructors do not take their message), so the user would lose the line
    and the exit status the local engine gives.
    """
    stats = ReadStats()
    messages: list[str] = []
    problems = Problems(strict=strict, stats=stats, on_report=messages.append)
    try:
        yield from _pieces(path, fmt, problems, ranges, flush_bytes)
    except (BadRecordError, FormatMismatchError) as error:
        yield json.dumps({"failed": _carried(error)})
        return
    counters: dict[str, Any] = {name: getattr(stats, name) for name in READ_COUNTERS}
    yield json.dumps(counters | ({"problems": messages} if messages else {}))


def _pieces(
    path: str, fmt: TraceFormat | None, problems: Problems, ranges: int, flush_bytes: int
) -> Iterator[list[tuple[str, bytes]]]:
    """`read_ranges`' fragments of one file, `ranges` lists per flush; an unreadable file is
    reported as a bad record (raising `BadRecordError` with `strict`), as by `read_spans`."""
    pieces: list[list[tuple[str, bytes]]] = [[] for _ in range(ranges)]
    held = 0
    try:
        for batch in read_file(path, problems, fmt=fmt):
            for trace_id, spans in fragments(batch.spans).items():
                key = order_key(trace_id)
                data = encode_fragment(spans)
                pieces[key_range(key, ranges)].append((key, data))
                held += len(data)
            if held >= flush_bytes:
                for piece in pieces:
                    yield piece
                pieces, held = [[] for _ in range(ranges)], 0
    except (OSError, ValueError) as error:
        report_unreadable(path, problems, error)
    for piece in pieces:
        yield piece


def _carried(error: BadRecordError | FormatMismatchError) -> dict[str, str]:
    """What `raise_carried` needs to raise `error` again in the driver: its kind and fields."""
    if isinstance(error, FormatMismatchError):
        return {
            "kind": "format",
            "path": os.fspath(error.path),
            "requested": error.requested,
            "detected": error.detected,
        }
    return {"kind": "bad_record", "where": error.where, "message": error.message}


def raise_carried(last: dict[str, Any]) -> None:
    """Raise the error a read task carried out as its last object (`read_ranges`), if any."""
    failed = last.get("failed")
    if failed is None:
        return
    if failed["kind"] == "format":
        raise FormatMismatchError(Path(failed["path"]), failed["requested"], failed["detected"])
    raise BadRecordError(failed["where"], failed["message"])


class ReadRanges:
    """The run's read tasks (one per file, started at once, one CPU each) and their pieces."""

    def __init__(
        self, ray: Any, paths: Sequence[str], *, fmt: TraceFormat | None, strict: bool
    ) -> None:
        """Start a read task per file of `paths`, cutting fragments into `range_count` ranges."""
        self._ray = ray
        self.ranges = range_count(paths)
        task = ray.remote(num_cpus=1, num_returns="streaming")(read_ranges)
        self._generators = [
            task.remote(os.fspath(path), fmt, strict, self.ranges) for path in paths
        ]
        self._pieces: list[list[Any]] = []

    def counters(self) -> Iterator[dict[str, Any]]:
        """Wait for every read to end; yield each file's read counters, in the files' order,
        with its bad records' messages under `"problems"` when it had any (`read_ranges`).

        A read that failed raises here, the first in the files' order (as the local engine
        reads them): its own error (`BadRecordError` with `strict`, `FormatMismatchError`, see
        `read_ranges`), or Ray's (a lost node).
        """
        refs = [list(generator) for generator in self._generators]
        self._generators = []
        for found in refs:
            self._pieces.append(found[:-1])
            last = json.loads(self._ray.get(found[-1]))
            raise_carried(last)
            yield last

    def take(self) -> Iterator[list[Any]]:
        """After `counters`: each range's pieces (object refs: file by file, flush by flush),
        range 0 first; the refs are handed over (not kept here: a range's objects are freed
        once its assemble task is done with them)."""
        pieces, self._pieces = self._pieces, []
        for index in range(self.ranges):
            taken = []
            for found in pieces:
                for at in range(index, len(found), self.ranges):
                    taken.append(found[at])
                    found[at] = None
            yield taken
