"""Telling trace file formats apart from their first records (after decompression).

Not from the first line alone: a first line cut by log rotation, a stray line of garbage or the
NUL bytes `copytruncate` leaves must not decide. In order: the first complete lines that parse as
JSON records decide (OTLP/JSON requests or Jaeger traces); else bytes that JSON text never holds
(control characters other than NUL and whitespace: at least 1 in 100, or any when no JSON key is
seen) mean OTLP protobuf; else the first JSON keys that only one format uses (`"resourceSpans"`,
`"traceId"` vs. Jaeger's `"traceID"`, `"operationName"`); else the file name's extension; else
the file is none of the formats.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final, Literal, TypeAlias

from groundwire.offline.readers._json import json_loads
from groundwire.offline.readers._source import SourceFile

__all__ = ["FORMATS", "FORMAT_NAMES", "FormatMismatchError", "TraceFormat", "detect_format"]

TraceFormat: TypeAlias = Literal["otlp-json", "otlp-proto", "jaeger"]
"""A trace file format groundwire reads."""
FORMATS: Final[tuple[TraceFormat, ...]] = ("otlp-json", "otlp-proto", "jaeger")
FORMAT_NAMES: Final[dict[TraceFormat, str]] = {
    "otlp-json": "OTLP/JSON",
    "otlp-proto": "OTLP protobuf",
    "jaeger": "Jaeger JSON",
}
"""How messages name each format."""

_SAMPLE: Final = 1 << 16
_LINES: Final = 20
"""Complete lines of the sample tried as JSON records."""
_BINARY: Final = re.compile(rb"[\x01-\x08\x0b\x0c\x0e-\x1f]")
_OTLP_SIGNALS: Final = frozenset(
    {
        "resourceSpans",
        "resource_spans",
        "resourceMetrics",
        "resource_metrics",
        "resourceLogs",
        "resource_logs",
    }
)
_JAEGER_TOP: Final = frozenset({"data", "traceID", "spans", "processes"})
_OTLP_KEY: Final = re.compile(
    rb'(?<!\\)"(?:resource_?[Ss]pans|resource_?[Ll]ogs|resource_?[Mm]etrics|scope_?[Ss]pans|'
    rb"scope_?[Ll]ogs|log_?[Rr]ecords|trace_?[Ii]d|span_?[Ii]d|startTimeUnixNano|"
    rb'start_time_unix_nano)"\s*:'
)
_JAEGER_KEY: Final = re.compile(rb'(?<!\\)"(?:traceID|spanID|operationName|processID)"\s*:')
_EXTENSIONS: Final[dict[str, TraceFormat]] = {
    ".jsonl": "otlp-json",
    ".ndjson": "otlp-json",
    ".pb": "otlp-proto",
    ".binpb": "otlp-proto",
    ".protobuf": "otlp-proto",
    ".proto": "otlp-proto",
}
_COMPRESSED: Final = (".gz", ".gzip", ".zst", ".zstd")


class FormatMismatchError(ValueError):
    """A file was to be read in one format but its records are in another."""

    def __init__(self, path: Path, requested: TraceFormat, detected: TraceFormat) -> None:
        super().__init__(
            f"{path} is {FORMAT_NAMES[detected]} ({detected}), not {FORMAT_NAMES[requested]} "
            f"({requested}); read it as {detected}, or leave the format out to detect it"
        )
        self.path = path
        self.requested = requested
        self.detected = detected


def _sample(source: SourceFile) -> bytes:
    """The first decompressed bytes, without consuming them."""
    stream = source.stream
    return stream.peek(_SAMPLE)[:_SAMPLE]


def _vote(value: object) -> TraceFormat | None:
    """The format one parsed JSON record belongs to, if it shows one."""
    if isinstance(value, list):
        first = value[0] if value else None
        return "jaeger" if isinstance(first, dict) and _JAEGER_TOP.intersection(first) else None
    if not isinstance(value, dict):
        return None
    if _OTLP_SIGNALS.intersection(value):
        return "otlp-json"
    if _JAEGER_TOP.intersection(value):
        return "jaeger"
    return None


def _from_records(sample: bytes) -> TraceFormat | None:
    """The format most of the first complete lines that parse as JSON records show, if any."""
    lines = sample.split(b"\n")
    if len(lines) > 1:
        lines = lines[:-1]  # the last piece may be cut by the sample's end
    votes: dict[TraceFormat, int] = {}
    for line in lines[:_LINES]:
        if not line.strip():
            continue
        try:
            value = json_loads(line)
        except (ValueError, RecursionError):
            continue
        found = _vote(value)
        if found is not None:
            votes[found] = votes.get(found, 0) + 1
    return max(votes.items(), key=lambda item: item[1])[0] if votes else None


def _from_keys(sample: bytes) -> TraceFormat | None:
    """The format whose JSON keys come first in the sample (string contents escape quotes)."""
    otlp = _OTLP_KEY.search(sample)
    jaeger = _JAEGER_KEY.search(sample)
    if otlp is None and jaeger is None:
        return None
    if jaeger is None or (otlp is not None and otlp.start() < jaeger.start()):
        return "otlp-json"
    return "jaeger"


def _from_name(path: Path) -> TraceFormat | None:
    """The format the file name's extension suggests (compression suffixes ignored)."""
    name = path.name.lower()
    for suffix in _COMPRESSED:
        name = name.removesuffix(suffix)
    return _EXTENSIONS.get(Path(name).suffix)


def sniff_format(source: SourceFile) -> TraceFormat | None:
    """The format the content shows (records, keys, binary bytes); None when it shows none."""
    sample = _sample(source).lstrip(b"\xef\xbb\xbf")
    found = _from_records(sample)
    if found is not None:
        return found
    keys = _from_keys(sample)
    controls = len(_BINARY.findall(sample))
    # Protobuf is full of control bytes (tags, sizes); JSON text has none, unless damaged.
    if controls and (keys is None or controls * 100 >= len(sample)):
        return "otlp-proto"
    return keys


def detect_format(source: SourceFile) -> TraceFormat:
    """The format of `source` from its content, else its extension; ValueError for neither."""
    sample = _sample(source)
    if not sample.strip(b"\xef\xbb\xbf \t\r\n\x00"):
        raise ValueError(f"{source.path} is empty")
    found = sniff_format(source) or _from_name(source.path)
    if found is None:
        raise ValueError(
            f"{source.path} is neither OTLP/JSON, OTLP protobuf nor Jaeger JSON "
            f"(it starts with {sample[:20]!r})"
        )
    return found
