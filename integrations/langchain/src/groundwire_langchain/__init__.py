"""OpenTelemetry instrumentation of LangChain for groundwire.

    from groundwire_langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument()  # every LangChain run now becomes a span

or, per call, `chain.invoke(question, config={"callbacks": [GroundwireCallbackHandler()]})`.
`opentelemetry-instrument python app.py` finds the instrumentor through the
`opentelemetry_instrumentor` entry point. Privacy: `GROUNDWIRE_HIDE_INPUTS`,
`GROUNDWIRE_HIDE_OUTPUTS`, `GROUNDWIRE_HIDE_DOCUMENT_TEXT`, `GROUNDWIRE_MAX_VALUE_LENGTH` or the
matching keyword arguments. See docs/langchain.md for the spans and attributes written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groundwire_langchain._instrumentor import LangChainInstrumentor
from groundwire_langchain.version import __version__

if TYPE_CHECKING:
    from groundwire_langchain._handler import GroundwireCallbackHandler

__all__ = ["GroundwireCallbackHandler", "LangChainInstrumentor", "__version__"]


def __getattr__(name: str) -> Any:
    """Import the callback handler (and with it LangChain) only when it is asked for."""
    if name == "GroundwireCallbackHandler":
        from groundwire_langchain._handler import GroundwireCallbackHandler

        return GroundwireCallbackHandler
    raise AttributeError(f"module 'groundwire_langchain' has no attribute {name!r}")
