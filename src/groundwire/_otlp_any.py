"""OTLP protobuf `AnyValue`s and `KeyValue` lists as plain Python values.

One decoding for every place that reads protobuf OTLP messages: the protobuf trace and log
readers (`groundwire.offline.readers`) and the test receivers (`groundwire.testing`), so that a
span or a log record read from a file and the same one received over OTLP carry equal
attributes. Arrays become tuples and kvlists dicts, the shapes OpenTelemetry attributes take in
Python. (The JSON mapping of OTLP has its own reader, `groundwire.offline.readers.any_value`.)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["proto_attributes", "proto_value", "scoped_records"]


def proto_value(value: Any) -> Any:
    """A protobuf `AnyValue` as a Python value (None when unset)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(proto_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return proto_attributes(value.kvlist_value.values)
    return getattr(value, kind)


def proto_attributes(pairs: Iterable[Any]) -> dict[str, Any]:
    """Protobuf `KeyValue`s (attributes) as a dict."""
    return {pair.key: proto_value(pair.value) for pair in pairs}


def scoped_records(
    groups: Iterable[Any], scopes: str, records: str
) -> Iterator[tuple[Mapping[str, Any], str | None, Any]]:
    """Each record of protobuf `resource_*` groups with its resource's attributes (one read-only
    mapping a group, shared by its records) and its scope's name (None when empty): the nesting
    every signal has (`resource_spans` > `scope_spans` > `spans`, `resource_logs` >
    `scope_logs` > `log_records`), `scopes` and `records` naming its two inner fields."""
    for group in groups:
        resource = MappingProxyType(proto_attributes(group.resource.attributes))
        for scoped in getattr(group, scopes):
            scope = scoped.scope.name or None
            for record in getattr(scoped, records):
                yield resource, scope, record
