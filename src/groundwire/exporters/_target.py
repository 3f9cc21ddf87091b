"""Where OTLP telemetry goes, resolved one way for every signal and every caller.

An `OtlpTarget` holds what a caller was told (an endpoint, a protocol, headers, a CA file for
TLS, a compression, a timeout); whatever it was not told comes from the standard
`OTEL_EXPORTER_OTLP_[TRACES_|METRICS_|LOGS_]*` variables, as the OTel SDK reads them.
`otlp_exporter(signal, target)` makes the SDK's OTLP exporter for one signal from it, which is the
only place groundwire chooses between OTLP/HTTP and OTLP/gRPC.

Endpoints follow the OpenTelemetry specification, so the same value means the same place
wherever it is given (`configure()`'s environment, `groundwire serve --forward`, `rescore
--export-otlp`):
- An endpoint given as an argument is a base, like `OTEL_EXPORTER_OTLP_ENDPOINT`. Over HTTP the
  signal's path is appended (`http://collector:4318` -> `.../v1/traces`); a path already ending
  in `/v1/traces`, `/v1/metrics` or `/v1/logs` is taken back to its base first, and a base
  without a scheme is `http://`. Over gRPC it is `host:port` (default port 4317), TLS for
  `https://` and `grpcs://`, plain for `http://`, `grpc://` and no scheme.
- Without one, the SDK's exporter resolves the variables itself (`OTEL_EXPORTER_OTLP_ENDPOINT`
  as a base, a signal's own `..._TRACES_ENDPOINT` as is), and likewise every other setting the
  target leaves at None.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

__all__ = [
    "COMPRESSIONS",
    "PROTOCOLS",
    "SIGNALS",
    "OtlpTarget",
    "grpc_target",
    "http_endpoint",
    "otlp_exporter",
    "otlp_protocol",
]

SIGNALS: Final = ("traces", "metrics", "logs")
"""The OTLP signals, as the variables and paths name them."""
PROTOCOLS: Final = ("http/protobuf", "grpc")
"""Values of `OTEL_EXPORTER_OTLP_[SIGNAL_]PROTOCOL` groundwire supports."""
COMPRESSIONS: Final = ("none", "gzip")
"""Compressions a target may name."""
GRPC_PORT: Final = 4317
HTTP_PORT: Final = 4318
_TLS_SCHEMES: Final = frozenset({"https", "grpcs"})

_EXPORTERS: Final = {
    ("traces", "http/protobuf"): ("http.trace_exporter", "OTLPSpanExporter"),
    ("metrics", "http/protobuf"): ("http.metric_exporter", "OTLPMetricExporter"),
    ("logs", "http/protobuf"): ("http._log_exporter", "OTLPLogExporter"),
    ("traces", "grpc"): ("grpc.trace_exporter", "OTLPSpanExporter"),
    ("metrics", "grpc"): ("grpc.metric_exporter", "OTLPMetricExporter"),
    ("logs", "grpc"): ("grpc._log_exporter", "OTLPLogExporter"),
}
"""The SDK's exporter class per (signal, protocol), under `opentelemetry.exporter.otlp.proto`."""


def _check_signal(signal: str) -> None:
    if signal not in SIGNALS:
        raise ValueError(f"signal must be one of {list(SIGNALS)}, got {signal!r}")


def otlp_protocol(signal: str, given: str | None = None) -> str:
    """`http/protobuf` or `grpc` for `signal`: `given`, else the standard variables
    (`OTEL_EXPORTER_OTLP_[SIGNAL_]PROTOCOL`), else `http/protobuf`; errors name the source."""
    _check_signal(signal)
    source = "protocol"
    protocol = (given or "").strip()
    if not protocol:
        source = f"OTEL_EXPORTER_OTLP_[{signal.upper()}_]PROTOCOL"
        specific = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL", "").strip()
        protocol = specific or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip()
    protocol = protocol or "http/protobuf"
    if protocol not in PROTOCOLS:
        raise ValueError(
            f"OTLP protocol {protocol!r} ({source}) is not supported; use one of {list(PROTOCOLS)}"
        )
    return protocol


def grpc_target(endpoint: str) -> tuple[str, bool]:
    """`host:port` and whether TLS is used, for a gRPC endpoint (`grpc[s]://`, `http[s]://` or
    a bare `host[:port]`)."""
    text = endpoint if "://" in endpoint else f"//{endpoint}"
    parts = urlsplit(text)
    host = parts.hostname or "127.0.0.1"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port or GRPC_PORT}", parts.scheme in _TLS_SCHEMES


def http_endpoint(base: str, signal: str) -> str:
    """The OTLP/HTTP URL of `signal` under `base` (see the module docstring)."""
    _check_signal(signal)
    root = base.strip().rstrip("/")
    for name in SIGNALS:
        root = root.removesuffix(f"/v1/{name}")
    if "://" not in root:
        root = f"http://{root}"
    return f"{root}/v1/{signal}"


@dataclass(frozen=True, slots=True)
class OtlpTarget:
    """An OTLP destination; None fields come from the standard variables (see the module)."""

    endpoint: str | None = None
    """A base endpoint (`http://collector:4318`, `grpc://collector:4317`, `host:port`)."""
    protocol: str | None = None
    """`http/protobuf` or `grpc`."""
    headers: Mapping[str, str] | None = None
    """Sent with every export (secrets: never logged)."""
    ca_file: str | None = None
    """CA bundle that verifies a TLS endpoint."""
    compression: str | None = None
    """`none` or `gzip`."""
    timeout_s: float | None = None
    """Timeout of one export (the SDK's retry series stays within it)."""

    def __post_init__(self) -> None:
        """Check what was given; errors name the field."""
        if self.protocol is not None:
            otlp_protocol("traces", self.protocol)
        if self.compression is not None and self.compression not in COMPRESSIONS:
            raise ValueError(
                f"compression must be one of {list(COMPRESSIONS)}, got {self.compression!r}"
            )
        if self.timeout_s is not None and not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be a positive number, got {self.timeout_s!r}")

    def protocol_for(self, signal: str) -> str:
        """The protocol `signal` is exported with."""
        return otlp_protocol(signal, self.protocol)

    def endpoint_for(self, signal: str) -> str | None:
        """What the exporter of `signal` is given: a URL over HTTP, `host:port` over gRPC;
        None when the standard variables decide."""
        if not self.endpoint:
            return None
        if self.protocol_for(signal) == "grpc":
            return grpc_target(self.endpoint)[0]
        return http_endpoint(self.endpoint, signal)

    def exporter_options(self, signal: str) -> dict[str, Any]:
        """Keyword arguments of the SDK's OTLP exporter for `signal` (only what was given)."""
        grpc = self.protocol_for(signal) == "grpc"
        options: dict[str, Any] = {}
        endpoint = self.endpoint_for(signal)
        if endpoint is not None:
            options["endpoint"] = endpoint
        if self.headers is not None:
            options["headers"] = dict(self.headers)
        if self.timeout_s is not None:
            options["timeout"] = self.timeout_s
        if grpc:
            options.update(self._grpc_options())
        else:
            if self.compression is not None:
                from opentelemetry.exporter.otlp.proto.http import Compression

                gzip = self.compression == "gzip"
                options["compression"] = Compression.Gzip if gzip else Compression.NoCompression
            if self.ca_file is not None:
                options["certificate_file"] = self.ca_file
        return options

    def _grpc_options(self) -> dict[str, Any]:
        """The gRPC-only options: plain or TLS (with the CA file), and the compression."""
        options: dict[str, Any] = {}
        if self.compression is None and not self.endpoint:
            return options
        import grpc  # type: ignore[import-untyped]

        if self.compression is not None:
            gzip = self.compression == "gzip"
            options["compression"] = (
                grpc.Compression.Gzip if gzip else grpc.Compression.NoCompression
            )
        if self.endpoint:
            secure = grpc_target(self.endpoint)[1]
            options["insecure"] = not secure
            if secure and self.ca_file:
                with open(self.ca_file, "rb") as file:
                    root = file.read()
                options["credentials"] = grpc.ssl_channel_credentials(root_certificates=root)
        return options


def otlp_exporter(signal: str, target: OtlpTarget) -> Any:
    """The OTel SDK's OTLP exporter of `signal` (`traces`, `metrics`, `logs`) for `target`."""
    module, name = _EXPORTERS[(signal, target.protocol_for(signal))]
    exporter_class = getattr(
        importlib.import_module(f"opentelemetry.exporter.otlp.proto.{module}"), name
    )
    return exporter_class(**target.exporter_options(signal))
