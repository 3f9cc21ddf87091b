"""The LangChain versions this instrumentation supports: the one place the range is declared."""

from __future__ import annotations

from typing import Final

_instruments: Final = ("langchain-core >= 0.3",)
"""Requirement strings `BaseInstrumentor` checks before instrumenting."""
