"""OTLP protobuf messages as OTLP/JSON, the way the OpenTelemetry Collector writes them.

Protobuf's canonical JSON mapping already gives lowerCamelCase keys, 64-bit integers as decimal
strings and omitted defaults; OTLP/JSON adds two rules: enums are integers, and trace and span
ids are hex strings (not base64). `from_otlp_json` reverses it for readers.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, TypeVar

from google.protobuf import json_format  # type: ignore[import-untyped]
from google.protobuf.message import Message  # type: ignore[import-untyped]

__all__ = ["from_otlp_json", "to_otlp_json"]

_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})
M = TypeVar("M", bound=Message)


def _convert_ids(node: Any, convert: Any) -> Any:
    """Copy of a JSON tree with every trace/span id converted by `convert`."""
    if isinstance(node, dict):
        return {
            key: convert(value)
            if key in _ID_KEYS and isinstance(value, str)
            else _convert_ids(value, convert)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_convert_ids(item, convert) for item in node]
    return node


def _b64_to_hex(value: str) -> str:
    """Protobuf JSON's base64 bytes as OTLP/JSON's hex."""
    return base64.b64decode(value).hex()


def _hex_to_b64(value: str) -> str:
    """OTLP/JSON's hex id back to protobuf JSON's base64."""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = base64.b64decode(value)  # tolerate files written with base64 ids
    return base64.b64encode(raw).decode("ascii")


def to_otlp_json(message: Message) -> str:
    """One compact OTLP/JSON document (no newline) for an OTLP request message."""
    as_dict = json_format.MessageToDict(message, use_integers_for_enums=True)
    return json.dumps(_convert_ids(as_dict, _b64_to_hex), separators=(",", ":"))


def from_otlp_json(text: str | bytes, message: M) -> M:
    """Parse OTLP/JSON into `message` (hex ids back to bytes); errors say what was malformed."""
    try:
        data = json.loads(text)
        json_format.ParseDict(_convert_ids(data, _hex_to_b64), message, ignore_unknown_fields=True)
    except (ValueError, json_format.ParseError, binascii.Error) as error:
        raise ValueError(f"not an OTLP/JSON {type(message).__name__}: {error}") from error
    return message
