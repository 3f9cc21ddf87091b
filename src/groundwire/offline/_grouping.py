"""Whole traces from many files: spans grouped by trace id, whatever the files and their order.

When traces may be split across files (rotated Collector output, a folder of parts, files given in
any order) a streaming window cannot know that more of a trace is still to come in another file.
So both engines group every span by trace id before a trace is assembled: the local engine spills
span fragments to partition files on disk (`SpillGrouper`), Ray shuffles them (`ray_engine`). Both
release traces in the same order, `order_key`: a CRC-32 of the trace id, then the trace id, a
stable order that does not depend on how the spans were split into files or in which order the
files were read. Memory is bounded by the largest partition, not the input.

`trace_gap` tells an incomplete trace (spans whose parents never arrived) from a whole one; such a
trace is counted and reported, never scored from part of its spans.
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import shutil
import tempfile
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any, Final

from groundwire.assembly import SpanRecord, span_kind

__all__ = [
    "ROOT_MISSING",
    "SPANS_MISSING",
    "SpillGrouper",
    "decode_fragment",
    "encode_fragment",
    "fragments",
    "merge_fragments",
    "order_key",
    "trace_gap",
]

ROOT_MISSING: Final = "root span missing"
"""Incomplete: the trace's top span never arrived (its spans point at parents that are absent)."""
SPANS_MISSING: Final = "spans missing under the root"
"""Incomplete: the root is there, but some spans point at parents that never arrived."""

_PARTITION_BYTES: Final = 32 * 1024 * 1024
"""Input bytes (uncompressed estimate) per spill partition: bounds the memory of one partition."""
_COMPRESSED_RATIO: Final = 8
"""How much larger a gzip/zstd trace file is once decompressed (an estimate, for sizing only)."""
_MAX_PARTITIONS: Final = 256


def order_key(trace_id: str) -> str:
    """The release order of a trace: CRC-32 of its id (8 hex digits), then the id itself."""
    return f"{zlib.crc32(trace_id.encode('ascii')):08x}{trace_id}"


def trace_gap(spans: Collection[SpanRecord], absent: Collection[str] = ()) -> str | None:
    """Why the trace is incomplete (`ROOT_MISSING`, `SPANS_MISSING`), or None when it is whole.

    A span whose parent is in the same process (not remote) but not among `spans` means spans
    never arrived. `absent` holds span ids known to be left out on purpose (earlier evaluation
    spans), whose children are not gaps. One exception: a trace whose only such span is its
    single top, and is not a retriever or model call, is taken as whole: its parent lives in an
    upstream service that did not mark it remote (older OTLP, Jaeger).
    """
    ids = {span.span_id for span in spans}
    orphans = [
        span
        for span in spans
        if span.parent_span_id not in ids  # the cheap test first: most parents are there
        and not span.is_local_root
        and span.parent_span_id not in absent
    ]
    if not orphans:
        return None
    has_root = any(span.is_local_root for span in spans)
    if has_root:
        return SPANS_MISSING
    if len(orphans) == 1 and span_kind(orphans[0]) == "other":
        return None
    return ROOT_MISSING


def fragments(spans: Iterable[SpanRecord]) -> dict[str, list[SpanRecord]]:
    """One record's spans by trace id, in their order."""
    by_trace: dict[str, list[SpanRecord]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    return by_trace


def _read_only(values: dict[str, Any]) -> Mapping[str, Any]:
    """Rebuild a read-only mapping on unpickling (see `_Pickler`)."""
    return MappingProxyType(values)


class _Pickler(pickle.Pickler):
    """Pickles span records as they are: read-only mappings (which plain pickle refuses) travel
    as dicts and come back read-only; a resource shared by spans is written once per fragment."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[MappingProxyType] = lambda proxy: (_read_only, (dict(proxy),))


def encode_fragment(spans: list[SpanRecord]) -> bytes:
    """Pickle a list of spans of one trace (for a spill file or a Ray row)."""
    buffer = io.BytesIO()
    _Pickler(buffer, pickle.HIGHEST_PROTOCOL).dump(spans)
    return buffer.getvalue()


def decode_fragment(data: bytes) -> list[SpanRecord]:
    """The spans `encode_fragment` pickled."""
    spans: list[SpanRecord] = pickle.loads(data)
    return spans


def merge_fragments(parts: Iterable[list[SpanRecord]]) -> list[SpanRecord]:
    """One trace's spans from its fragments, unique by span id (a repeated span: the last wins)."""
    spans: dict[str, SpanRecord] = {}
    for part in parts:
        for span in part:
            spans[span.span_id] = span
    return list(spans.values())


def partition_count(total_bytes: int, compressed: bool) -> int:
    """How many spill partitions keep each one near `_PARTITION_BYTES` (a power of two)."""
    estimate = total_bytes * (_COMPRESSED_RATIO if compressed else 1)
    count = 1
    while count < _MAX_PARTITIONS and estimate > count * _PARTITION_BYTES:
        count *= 2
    return count


class SpillGrouper:
    """Groups span fragments by trace id through partition files in a private temp folder.

    `add` each record's spans while reading; then `traces()` yields every trace whole, in
    `order_key` order, one partition in memory at a time. `close()` removes the folder (also on
    errors: use it as a context manager).
    """

    def __init__(self, partitions: int, folder: str | os.PathLike[str] | None = None) -> None:
        """Open `partitions` (a power of two up to 256) spill files under `folder` (or TMPDIR)."""
        if partitions < 1 or partitions > _MAX_PARTITIONS or partitions & (partitions - 1):
            raise ValueError(f"partitions must be a power of two in 1..256, got {partitions}")
        self._shift = 32 - (partitions.bit_length() - 1)
        self._folder = Path(tempfile.mkdtemp(prefix="groundwire-group-", dir=folder))
        self._files: list[IO[bytes]] = []
        try:
            for index in range(partitions):
                self._files.append((self._folder / f"{index:03d}.pickle").open("wb"))
        except BaseException:
            self.close()
            raise
        self.spilled_bytes = 0
        """Bytes written to the partition files."""

    def _partition(self, trace_id: str) -> int:
        """The partition of `trace_id`: top bits of its CRC-32, so partitions keep key order."""
        if self._shift == 32:
            return 0
        return zlib.crc32(trace_id.encode("ascii")) >> self._shift

    def add(self, spans: Iterable[SpanRecord]) -> None:
        """Spill one record's spans, one fragment per trace."""
        for trace_id, part in fragments(spans).items():
            data = encode_fragment(part)
            file = self._files[self._partition(trace_id)]
            pickle.dump((trace_id, data), file, pickle.HIGHEST_PROTOCOL)
            self.spilled_bytes += len(data)

    def traces(self) -> Iterator[list[SpanRecord]]:
        """Every trace whole, in `order_key` order; each partition file is deleted once read."""
        for file in self._files:
            file.close()
        for index in range(len(self._files)):
            path = self._folder / f"{index:03d}.pickle"
            by_trace: dict[str, list[bytes]] = {}
            with path.open("rb") as file:
                while True:
                    try:
                        trace_id, data = pickle.load(file)
                    except EOFError:
                        break
                    by_trace.setdefault(trace_id, []).append(data)
            path.unlink()
            for trace_id in sorted(by_trace, key=order_key):
                parts = by_trace.pop(trace_id)
                yield merge_fragments(decode_fragment(data) for data in parts)

    def close(self) -> None:
        """Close and remove the spill files."""
        for file in self._files:
            file.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> SpillGrouper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
