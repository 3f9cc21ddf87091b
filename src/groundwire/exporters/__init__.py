"""Exporters groundwire ships: OTLP/JSON lines files in the OpenTelemetry Collector's layout.

`JsonLinesSpanExporter`, `JsonLinesMetricExporter` and `JsonLinesLogExporter` are what
`groundwire.configure()` uses when no OTLP endpoint is configured; `to_otlp_json` /
`from_otlp_json` convert single requests.
"""

from __future__ import annotations

from groundwire.exporters._jsonl import (
    JsonLinesFile,
    JsonLinesLogExporter,
    JsonLinesMetricExporter,
    JsonLinesSpanExporter,
)
from groundwire.exporters._otlp_json import from_otlp_json, to_otlp_json

__all__ = [
    "JsonLinesFile",
    "JsonLinesLogExporter",
    "JsonLinesMetricExporter",
    "JsonLinesSpanExporter",
    "from_otlp_json",
    "to_otlp_json",
]
