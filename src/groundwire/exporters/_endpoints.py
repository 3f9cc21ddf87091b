"""Where a tracer provider's spans go, read from its span processors, and whether that is a
given server: what `configure(phoenix_annotations=...)` checks, since an annotation attaches
only to a span the Phoenix it is posted to has stored."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

__all__ = ["same_server", "span_destinations"]

_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
_OTLP_GRPC_PORT = 4317
"""Phoenix (like a Collector) takes OTLP/gRPC on this port beside its HTTP one."""


def span_destinations(tracer_provider: Any) -> list[str]:
    """The endpoints (`http://host:port/v1/traces`, `host:port` for gRPC) and files (`file
    PATH`) the provider's span exporters send to; exporters that name neither (in-memory,
    console, the app's own kinds) are left out."""
    active = getattr(tracer_provider, "_active_span_processor", None)
    found: list[str] = []
    for processor in getattr(active, "_span_processors", ()):
        exporter = _exporter_of(processor)
        while hasattr(exporter, "inner"):  # groundwire's ExportGuard wrappers
            exporter = exporter.inner
        endpoint = getattr(exporter, "_endpoint", None)
        shared = getattr(exporter, "_file", None)
        if isinstance(endpoint, str) and endpoint:
            found.append(endpoint)
        elif shared is not None and hasattr(shared, "path"):
            found.append(f"file {shared.path}")
    return found


def _exporter_of(processor: Any) -> Any:
    """The span exporter of the SDK's simple or batch span processor, else None."""
    exporter = getattr(processor, "span_exporter", None)
    if exporter is None:
        exporter = getattr(getattr(processor, "_batch_processor", None), "_exporter", None)
    return exporter


def same_server(destination: str, url: str) -> bool:
    """True when `destination` (an endpoint from `span_destinations`) is the server at `url`:
    the same host (loopback names count as one) on the same port or on the OTLP/gRPC port."""
    if destination.startswith("file "):
        return False
    there = urlsplit(destination if "://" in destination else f"//{destination}")
    here = urlsplit(url if "://" in url else f"//{url}")
    try:
        ports = (there.port, here.port)
    except ValueError:
        return False
    hosts = {there.hostname, here.hostname}
    if len(hosts) > 1 and not hosts <= _LOOPBACK:
        return False
    return ports[0] in (ports[1], _OTLP_GRPC_PORT) or None in ports
