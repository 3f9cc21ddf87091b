"""What a dialect reader is: how one instrumentor names a span's role, input, output, documents.

Each dialect is a small stateless object. The `SpanReader` asks the dialects in precedence order
(`DIALECTS` in this package) and takes the first answer; each answer names the attribute it came
from, so `groundwire inspect` can say where a query, a context or an answer was read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from groundwire._types import Context
from groundwire.assembly._record import SpanRecord

__all__ = ["Dialect", "Source"]

Source = tuple[str, Any, Any]
"""`(attribute, value, mime type)`: a raw or already-decoded value and where it was read."""


class Dialect:
    """One instrumentor's attribute names. The base class recognises nothing."""

    name: ClassVar[str] = ""
    """Short name used in `inspect` output and diagnoses, e.g. `openllmetry`."""
    title: ClassVar[str] = ""
    """Human name, e.g. `OpenLLMetry (Traceloop)`."""
    input_keys: ClassVar[tuple[str, ...]] = ()
    """Attributes whose presence means the span recorded an input."""
    output_keys: ClassVar[tuple[str, ...]] = ()
    """Attributes whose presence means the span recorded an output."""
    output_prefixes: ClassVar[tuple[str, ...]] = ()
    """Prefixes of indexed attributes whose presence also means an output (`x.{i}.content`)."""
    marker_keys: ClassVar[tuple[str, ...]] = ()
    """Attributes that only this dialect writes (to recognise its spans when content is off)."""
    retrieval_hint: ClassVar[str] = ""
    """How this dialect marks a retrieval span (for the "no retrieval span" diagnosis)."""
    content_switch: ClassVar[str] = ""
    """The setting that turns content capture off in this instrumentor (for diagnoses)."""

    def kind(self, attributes: Mapping[str, Any]) -> str | None:
        """The span's role (`_kinds.KIND_*`), or None when this dialect says nothing about it."""
        return None

    def inputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """The span's input values in this dialect, best first (absent ones left out)."""
        return [(key, attributes[key], None) for key in self.input_keys if key in attributes]

    def outputs(self, attributes: Mapping[str, Any]) -> list[Source]:
        """The span's output values in this dialect, best first (absent ones left out)."""
        return [(key, attributes[key], None) for key in self.output_keys if key in attributes]

    def documents(self, record: SpanRecord, kind: str) -> tuple[str, list[Context]] | None:
        """The documents a retriever (or reranker) span returned, with the attribute read."""
        return None

    def instructions(self, attributes: Mapping[str, Any]) -> tuple[str, list[str]] | None:
        """A model call's system instructions as text parts, with the attribute read."""
        return None

    def recognises(self, attributes: Mapping[str, Any]) -> bool:
        """True when the span carries one of this dialect's own attributes."""
        return any(key in attributes for key in self.marker_keys)
