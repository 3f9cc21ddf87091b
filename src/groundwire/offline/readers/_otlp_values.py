"""OTLP/JSON values shared by the span and log readers: `AnyValue`, `KeyValue` lists, key spellings.

The protobuf JSON mapping accepts lowerCamelCase and snake_case keys alike; `AnyValue` arrays
become tuples and kvlists dicts (the shapes OpenTelemetry attributes take in Python).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["any_value", "attributes", "get", "nanos"]


def get(node: Mapping[str, Any], camel: str, snake: str, default: Any = None) -> Any:
    """`node[camel]`, else `node[snake]` (protobuf JSON accepts both spellings)."""
    value = node.get(camel)
    if value is None:
        value = node.get(snake, default)
    return value


def nanos(value: Any, what: str) -> int:
    """A Unix-nanosecond time, 0 when absent; `what` names the field in the ValueError for
    anything else. One rule for spans and log records, protobuf JSON's for a 64-bit integer: a
    decimal string or a whole number; never a boolean, a fraction (not truncated), an infinite or a
    negative number."""
    kind = type(value)  # exact types, in the order they come: this runs twice a span read
    if kind is str:
        if not value:
            return 0
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"{what} must be an integer (nanoseconds), got {value!r}") from None
    elif kind is int:
        number = value
    elif value is None:
        return 0
    elif kind is float and value.is_integer():
        number = int(value)
    else:
        raise ValueError(f"{what} must be an integer (nanoseconds), got {value!r}")
    if number < 0:
        raise ValueError(f"{what} must not be negative, got {number}")
    return number


def _array(item: Any) -> tuple[Any, ...]:
    """An `arrayValue` as a tuple."""
    return tuple(any_value(v) for v in (item or {}).get("values", ()))


def _kvlist(item: Any) -> dict[str, Any]:
    """A `kvlistValue` as a dict."""
    return attributes((item or {}).get("values", ()))


def _identity(item: Any) -> Any:
    """A `stringValue` as is."""
    return item


_CONVERTERS: Final[dict[str, Callable[[Any], Any]]] = {
    "stringValue": _identity,
    "intValue": int,
    "doubleValue": float,
    "boolValue": bool,
    "arrayValue": _array,
    "kvlistValue": _kvlist,
    "bytesValue": base64.b64decode,
}
_CONVERTERS.update({re.sub(r"([A-Z])", r"_\1", k).lower(): v for k, v in list(_CONVERTERS.items())})


def any_value(value: Any) -> Any:
    """An OTLP/JSON `AnyValue` as a Python value (arrays as tuples, kvlists as dicts)."""
    if not isinstance(value, Mapping):
        raise ValueError(f"attribute value must be an object, got {value!r}")
    for key, item in value.items():
        convert = _CONVERTERS.get(key)
        if convert is not None:
            return convert(item)
    return None


def attributes(pairs: Any) -> dict[str, Any]:
    """A list of OTLP/JSON `KeyValue`s as a dict.

    A value that is a plain `{"stringValue": ...}` (most attributes) is taken without the general
    `any_value` dispatch: the same result, a third of the cost on the offline read path.
    """
    if not pairs:
        return {}
    if not isinstance(pairs, list):
        raise ValueError(f"attributes must be a list, got {type(pairs).__name__}")
    try:  # every value a plain string, the usual case: one comprehension
        out = {
            pair["key"]: value["stringValue"]
            for pair in pairs
            if type(value := pair["value"]) is dict and len(value) == 1 and "stringValue" in value
        }
    except (KeyError, TypeError):
        out = {}
    if len(out) == len(pairs):
        return out
    out = {}
    for pair in pairs:
        key = pair["key"]  # read before the value, as the errors of bad pairs always said
        value = pair.get("value") or {}
        if type(value) is dict and len(value) == 1 and "stringValue" in value:
            out[key] = value["stringValue"]
        else:
            out[key] = any_value(value)
    return out
