"""`LlamaIndexInstrumentor`: OpenTelemetry's `BaseInstrumentor` for LlamaIndex."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import trace
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)

from groundwire.capture import CaptureConfig
from groundwire_llamaindex.package import _instruments
from groundwire_llamaindex.version import __version__

if TYPE_CHECKING:  # LlamaIndex is imported at instrument(), not with this module
    from groundwire_llamaindex._handlers import Handlers

__all__ = ["LlamaIndexInstrumentor"]

_PRIVACY_OPTIONS: Final = ("hide_inputs", "hide_outputs", "hide_document_text")
_OPTIONS: Final = frozenset(
    {
        *_PRIVACY_OPTIONS,
        "max_value_length",
        "tracer_provider",
        "meter_provider",
        "logger_provider",
        "event_logger_provider",
    }
)


class LlamaIndexInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Traces LlamaIndex runs as OpenInference + GenAI-convention spans for groundwire.

    `instrument(tracer_provider=None, meter_provider=None, hide_inputs=None, hide_outputs=None,
    hide_document_text=None, max_value_length=None)`: providers default to the global ones;
    privacy switches left at None come from the `GROUNDWIRE_*` environment variables.
    `uninstrument()` removes the handlers and ends any span still open.
    """

    _handlers: Handlers | None = None

    def instrumentation_dependencies(self) -> Collection[str]:
        """The LlamaIndex versions this instrumentation supports."""
        return _instruments

    def _instrument(self, **kwargs: Any) -> None:
        """Check the options, build the capture config and tracer, add the handlers."""
        unknown = sorted(set(kwargs) - _OPTIONS)
        if unknown:
            raise TypeError(
                f"LlamaIndexInstrumentor.instrument() got unknown option(s) {unknown}; "
                f"expected some of {sorted(_OPTIONS)}"
            )
        for name in _PRIVACY_OPTIONS:
            value = kwargs.get(name)
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"LlamaIndexInstrumentor: {name} must be a bool, got {value!r}")
        config = CaptureConfig.from_env(
            **{name: kwargs.get(name) for name in (*_PRIVACY_OPTIONS, "max_value_length")}
        )
        tracer = trace.get_tracer(
            "groundwire_llamaindex", __version__, tracer_provider=kwargs.get("tracer_provider")
        )
        # LlamaIndex is imported only now: loading the entry point must stay cheap.
        from groundwire_llamaindex._handlers import install

        self._handlers = install(tracer, config)

    def _uninstrument(self, **kwargs: Any) -> None:
        """Remove the handlers and end whatever spans they still hold open."""
        handlers, self._handlers = self._handlers, None
        if handlers is not None:
            from groundwire_llamaindex._handlers import uninstall

            uninstall(handlers)
