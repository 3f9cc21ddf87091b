"""The distribution's version, reported as the tracer's instrumentation version."""

from __future__ import annotations

__version__ = "0.1.0"
