"""The instrumentation's version, reported as the tracer's instrumentation scope version."""

__version__ = "0.1.0"
