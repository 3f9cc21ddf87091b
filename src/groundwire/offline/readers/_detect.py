"""Telling trace file formats apart from their first bytes (after decompression)."""

from __future__ import annotations

import re
from typing import Final, Literal, TypeAlias

from groundwire.offline.readers._source import SourceFile

__all__ = ["FORMATS", "TraceFormat", "detect_format"]

TraceFormat: TypeAlias = Literal["otlp-json", "otlp-proto", "jaeger"]
"""A trace file format groundwire reads."""
FORMATS: Final[tuple[TraceFormat, ...]] = ("otlp-json", "otlp-proto", "jaeger")

_FIRST_KEY: Final = re.compile(rb'^\s*\{\s*"([A-Za-z_]+)"')
_OTLP_KEYS: Final = frozenset(
    {
        b"resourceSpans",
        b"resource_spans",
        b"resourceMetrics",
        b"resource_metrics",
        b"resourceLogs",
        b"resource_logs",
    }
)
_JAEGER_KEYS: Final = frozenset({b"data", b"traceID", b"total", b"limit", b"offset", b"errors"})


def detect_format(source: SourceFile) -> TraceFormat:
    """The format of `source`, from its first bytes; ValueError when it is none of them."""
    stream = source.stream
    head: bytes = stream.peek(4096)[:4096] if hasattr(stream, "peek") else b""
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not stripped:
        raise ValueError(f"{source.path} is empty")
    if stripped[:1] == b"[":
        return "jaeger"
    if stripped[:1] == b"{":
        match = _FIRST_KEY.match(stripped)
        key = match.group(1) if match else b""
        if key in _OTLP_KEYS:
            return "otlp-json"
        if key in _JAEGER_KEYS:
            return "jaeger"
        if b'"traceID"' in head:
            return "jaeger"
        return "otlp-json"
    if stripped[:1].isascii() and stripped[:1].isalpha():
        raise ValueError(
            f"{source.path} is neither OTLP/JSON, OTLP protobuf nor Jaeger JSON "
            f"(it starts with {head[:20]!r})"
        )
    return "otlp-proto"
