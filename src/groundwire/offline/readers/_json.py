"""`json_loads`: the standard library's `json.loads` for one JSON record, faster when msgspec is
installed (the `fast-json` extra), with the same value for every input.

Decoding the JSON was the largest single cost of reading an OTLP/JSON line (about 3 µs a span
of the 7 µs parsing costs); msgspec's decoder takes about half of that. It is used only where it
gives what `json.loads` gives: the same dicts, lists, strings, exact integers of any size
(unlike orjson, which turns integers beyond 64 bits into floats) and correctly rounded floats.
Wherever it refuses the input, `json.loads` decides instead, so the inputs the standard library
reads and msgspec does not (`NaN` and `Infinity`, numbers beyond the float range, lone surrogates,
a byte order mark, UTF-16 or UTF-32) still give the standard library's value, and bad JSON its
error message, as without msgspec.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

__all__ = ["FAST_DECODER", "json_loads", "stdlib_loads"]


def _fast_decoder() -> Callable[[bytes], Any] | None:
    """msgspec's JSON decoder into plain Python values, or None when msgspec is not installed."""
    try:
        import msgspec
    except ImportError:
        return None
    return msgspec.json.Decoder().decode


FAST_DECODER: Callable[[bytes], Any] | None = _fast_decoder()
"""The fast decoder in use (None: the standard library alone)."""

stdlib_loads: Callable[[bytes], Any] = json.loads
"""The reference every value of `json_loads` equals."""


def _loads_with(fast: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """`json.loads`, trying `fast` first; any input `fast` refuses goes to `json.loads`."""

    def loads(data: bytes) -> Any:
        """One JSON document (UTF-8 bytes) as Python values, exactly as `json.loads` gives it."""
        try:
            return fast(data)
        except (ValueError, RecursionError):  # msgspec.DecodeError and UnicodeDecodeError too
            return json.loads(data)

    return loads


json_loads: Callable[[bytes], Any] = (
    json.loads if FAST_DECODER is None else _loads_with(FAST_DECODER)
)
"""One JSON document as Python values: `json.loads`'s value and errors, msgspec's speed."""
