"""The span and event handlers groundwire adds to LlamaIndex's root dispatcher.

Both are thin adapters over one `Recorder`. The span handler overrides `span_enter`,
`span_exit` and `span_drop` directly (as LlamaIndex's own `NullSpanHandler` does) because the
recorder keeps its own records; LlamaIndex's `open_spans` bookkeeping would only add work.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import BaseSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from opentelemetry.trace import Tracer
from pydantic import PrivateAttr

from groundwire.capture import CaptureConfig
from groundwire_llamaindex._recorder import Recorder

__all__ = ["GroundwireEventHandler", "GroundwireSpanHandler", "install", "uninstall"]

logger = logging.getLogger("groundwire_llamaindex")


class GroundwireSpanHandler(BaseSpanHandler[BaseSpan]):
    """Forwards LlamaIndex span notices to the recorder; an error here never reaches the app."""

    _recorder: Recorder = PrivateAttr()

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self._recorder = recorder

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's name for this handler."""
        return "GroundwireSpanHandler"

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """A traced LlamaIndex call started."""
        try:
            self._recorder.enter(id_, bound_args.arguments, instance, parent_id)
        except Exception:
            logger.warning("could not start a span for %s", id_, exc_info=True)

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        """A traced LlamaIndex call returned."""
        try:
            self._recorder.exit(id_, result)
        except Exception:
            logger.warning("could not end the span of %s", id_, exc_info=True)

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        """A traced LlamaIndex call raised."""
        try:
            self._recorder.drop(id_, err)
        except Exception:
            logger.warning("could not end the span of %s", id_, exc_info=True)

    def new_span(self, *args: Any, **kwargs: Any) -> None:
        """Unused: `span_enter` is overridden."""
        return

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
        """Unused: `span_exit` is overridden."""
        return

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
        """Unused: `span_drop` is overridden."""
        return

    def close(self) -> None:
        """End every span still open (LlamaIndex calls this on dispatcher shutdown)."""
        self._recorder.close()


class GroundwireEventHandler(BaseEventHandler):
    """Forwards LlamaIndex events (LLM prompts and answers, rerank settings) to the recorder."""

    _recorder: Recorder = PrivateAttr()

    def __init__(self, recorder: Recorder) -> None:
        super().__init__()
        self._recorder = recorder

    @classmethod
    def class_name(cls) -> str:
        """LlamaIndex's name for this handler."""
        return "GroundwireEventHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        """Record what the event says about its span."""
        try:
            self._recorder.event(event)
        except Exception:
            logger.warning("could not record event %s", type(event).__name__, exc_info=True)


Handlers = tuple[GroundwireSpanHandler, GroundwireEventHandler]


def install(tracer: Tracer, config: CaptureConfig) -> Handlers:
    """Add a new span and event handler pair to LlamaIndex's root dispatcher."""
    recorder = Recorder(tracer, config)
    handlers = (GroundwireSpanHandler(recorder), GroundwireEventHandler(recorder))
    dispatcher = get_dispatcher()
    # New lists, not in-place appends: a thread dispatching right now keeps iterating its copy.
    dispatcher.span_handlers = [*dispatcher.span_handlers, handlers[0]]
    dispatcher.event_handlers = [*dispatcher.event_handlers, handlers[1]]
    return handlers


def uninstall(handlers: Handlers) -> None:
    """Remove the pair from the root dispatcher and end whatever spans it still holds open."""
    span_handler, event_handler = handlers
    dispatcher = get_dispatcher()
    dispatcher.span_handlers = [h for h in dispatcher.span_handlers if h is not span_handler]
    dispatcher.event_handlers = [h for h in dispatcher.event_handlers if h is not event_handler]
    span_handler.close()
