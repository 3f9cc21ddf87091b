"""One open OpenTelemetry span standing for one traced LlamaIndex call, and what it has seen."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import Span
from opentelemetry.util.types import AttributeValue

from groundwire._types import Context

__all__ = ["Record"]


class Record:
    """An open span, the LlamaIndex span ids that map to it, and the values it will carry.

    A LlamaIndex call becomes a record when its component gets a span (`kind_of`); nested calls
    on the same component and calls of untraced components become *aliases* of the nearest
    record, so their children still find a parent.
    """

    __slots__ = (
        "aliases",
        "altered",
        "attributes",
        "chat_error",
        "chat_finished",
        "chat_response",
        "data_source",
        "documents",
        "ended",
        "full_input",
        "full_output",
        "input_nodes",
        "instance_id",
        "kind",
        "llama_id",
        "open",
        "parent",
        "query",
        "recording",
        "root",
        "span",
        "streaming_llm",
        "waiting",
    )

    def __init__(
        self, llama_id: str, kind: str, span: Span, instance_id: int, parent: Record | None
    ) -> None:
        self.llama_id = llama_id
        self.kind = kind
        self.span = span
        self.recording = span.is_recording()
        """False when the sampler dropped the span: no value is read or written."""
        self.instance_id = instance_id
        """`id()` of the component, to fold its nested calls into this record."""
        self.parent = parent
        self.root: Record = parent.root if parent is not None else self
        self.open: set[Record] = set() if parent is None else self.root.open
        """The root's open descendants (shared), ended with the root so none can leak."""
        self.aliases: list[str] = []
        self.attributes: dict[str, AttributeValue] = {}
        """Attributes to set when the span ends."""
        self.query: str | None = None
        self.data_source: str | None = None
        """The retriever's `gen_ai.data_source.id`."""
        self.input_nodes: object = None
        self.full_input: str | None = None
        self.full_output: str | None = None
        self.documents: tuple[Context, ...] | None = None
        self.altered = False
        """True when a value was hidden or truncated on the span (see `LIVE_CONTENT`)."""
        self.waiting = False
        self.chat_response: Any = None
        """A chat engine's streaming response this record waits on."""
        self.chat_finished = False
        self.chat_error: BaseException | None = None
        """True while the call has returned but its stream is still being consumed."""
        self.streaming_llm: Record | None = None
        """The child LLM record whose token stream is being read, if any."""
        self.ended = False
