"""`LangChainInstrumentor`: trace every LangChain run without passing callbacks per call.

LangChain builds a callback manager for each run in `CallbackManager.configure`, and lets
libraries add a handler there through `langchain_core.tracers.context.register_configure_hook`
(how LangSmith's run collector hooks in). We register one hook per process; `instrument()` points
it at a fresh `GroundwireCallbackHandler` and `uninstrument()` points it at nothing, so no
LangChain class is patched and uninstrumenting really stops new runs from being traced.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, cast

from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)

from groundwire_langchain.package import _instruments

if TYPE_CHECKING:
    from groundwire_langchain._handler import GroundwireCallbackHandler

__all__ = ["LangChainInstrumentor"]

_OPTIONS = frozenset(
    {
        "tracer_provider",
        "meter_provider",
        "hide_inputs",
        "hide_outputs",
        "hide_document_text",
        "max_value_length",
        "logger_provider",
        "event_logger_provider",
    }
)
"""Keyword arguments `instrument()` understands (the last two are accepted and unused, as
OpenTelemetry's auto-instrumentation may pass them)."""


class _ActiveHandler:
    """What LangChain's configure hook reads: a ContextVar look-alike that every thread shares.

    A real ContextVar set by `instrument()` would be unset in threads started elsewhere, and
    LangChain has no way to unregister a hook; so one switch is registered per process and
    `get()` answers with whatever handler is active, or None when uninstrumented.
    """

    __slots__ = ("handler",)

    def __init__(self) -> None:
        self.handler: GroundwireCallbackHandler | None = None

    def get(self, default: Any = None) -> Any:
        """The active handler, or `default` when LangChain is not instrumented."""
        handler = self.handler
        return default if handler is None else handler


_SWITCH = _ActiveHandler()
_registered = False
_register_lock = threading.Lock()


def _register_hook() -> None:
    """Register the switch with LangChain once per process (hooks cannot be removed)."""
    global _registered
    with _register_lock:
        if _registered:
            return
        from langchain_core.tracers.context import register_configure_hook

        from groundwire_langchain._handler import GroundwireCallbackHandler

        # With `handle_class` set, LangChain adds the handler only to managers that have no
        # GroundwireCallbackHandler yet: one passed explicitly in `callbacks=` wins, no duplicates.
        register_configure_hook(
            cast("ContextVar[Any]", _SWITCH),
            inheritable=True,
            handle_class=GroundwireCallbackHandler,
        )
        _registered = True


class LangChainInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """OpenTelemetry instrumentor for LangChain: every run becomes a span.

    `instrument(tracer_provider=None, meter_provider=None, hide_inputs=None, hide_outputs=None,
    hide_document_text=None, max_value_length=None)`; providers default to the global ones and
    privacy switches left as None come from the `GROUNDWIRE_*` environment variables.
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        """The langchain-core versions this instrumentation supports."""
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        unknown = set(kwargs) - _OPTIONS
        if unknown:
            raise TypeError(
                f"LangChainInstrumentor.instrument() got unknown option(s) {sorted(unknown)}; "
                f"expected some of {sorted(_OPTIONS)}"
            )
        # LangChain is imported only now: loading the entry point must stay cheap for apps that
        # have groundwire-langchain installed but never use LangChain.
        from groundwire_langchain._handler import GroundwireCallbackHandler

        # meter_provider is accepted for the BaseInstrumentor contract; no metrics are recorded.
        handler = GroundwireCallbackHandler(
            kwargs.get("tracer_provider"),
            hide_inputs=kwargs.get("hide_inputs"),
            hide_outputs=kwargs.get("hide_outputs"),
            hide_document_text=kwargs.get("hide_document_text"),
            max_value_length=kwargs.get("max_value_length"),
        )
        _register_hook()
        _SWITCH.handler = handler

    def _uninstrument(self, **kwargs: Any) -> None:
        _SWITCH.handler = None

    @property
    def handler(self) -> GroundwireCallbackHandler | None:
        """The handler added to every run while instrumented, else None."""
        return _SWITCH.handler
