"""LangChain instrumentation."""
