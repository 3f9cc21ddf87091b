"""LlamaIndex instrumentation."""
