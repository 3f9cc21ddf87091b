"""The dialects the assembler reads, in precedence order (docs/assembly.md, "Dialects").

For each question about a span (its role, input, output, documents) the dialects are asked in
this order and the first answer wins: OpenInference (and groundwire's own spans), the
OpenTelemetry GenAI conventions, OpenLLMetry, MLflow.
"""

from __future__ import annotations

from typing import Final

from groundwire.assembly._dialects._base import Dialect, Source
from groundwire.assembly._dialects._genai import GenAI
from groundwire.assembly._dialects._mlflow import MLflow
from groundwire.assembly._dialects._openinference import OpenInference
from groundwire.assembly._dialects._openllmetry import OpenLLMetry

__all__ = [
    "DIALECTS",
    "INPUT_KEYS",
    "OUTPUT_KEYS",
    "OUTPUT_PREFIXES",
    "Dialect",
    "Source",
    "dialect_rank",
]

DIALECTS: Final[tuple[Dialect, ...]] = (OpenInference(), GenAI(), OpenLLMetry(), MLflow())
"""Every dialect, highest precedence first."""

INPUT_KEYS: Final = tuple(key for dialect in DIALECTS for key in dialect.input_keys)
"""Attributes whose presence means a span recorded an input, in any dialect."""
OUTPUT_KEYS: Final = tuple(key for dialect in DIALECTS for key in dialect.output_keys)
"""Attributes whose presence means a span recorded an output, in any dialect."""
OUTPUT_PREFIXES: Final = tuple(prefix for dialect in DIALECTS for prefix in dialect.output_prefixes)
"""Prefixes of indexed attributes whose presence also means an output, in any dialect."""

_RANKS: Final = {dialect.name: rank for rank, dialect in enumerate(DIALECTS)}


def dialect_rank(name: str) -> int:
    """The precedence of a dialect by name (0 is highest); unknown names rank last."""
    return _RANKS.get(name, len(DIALECTS))
