"""The LlamaIndex versions this instrumentation supports: the one place that says so."""

_instruments = ("llama-index-core >= 0.12",)
"""Requirement strings `BaseInstrumentor` checks before instrumenting."""
