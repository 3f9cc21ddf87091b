"""Turn LlamaIndex's span and event notices into OpenTelemetry spans.

Parentage comes from LlamaIndex's own parent span ids, never from attaching an OTel context: a
record's parent is the record its LlamaIndex parent id maps to, and a run's outermost span takes
the OTel context current when it starts. Values are read once, at the end, from the call's
arguments and result (and from LLM and rerank events), and written under the privacy switches.
The recorder keeps the records and their lifecycle (notices, events, streams, ending); what a
span starts with is `_start`, what it is written with `_writing`.
"""

from __future__ import annotations

import logging
import threading
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse
from llama_index.core.chat_engine.types import StreamingAgentChatResponse
from llama_index.core.instrumentation.events.chat_engine import (
    StreamChatEndEvent,
    StreamChatErrorEvent,
)
from llama_index.core.instrumentation.events.exception import ExceptionEvent
from llama_index.core.instrumentation.events.llm import (
    LLMChatEndEvent,
    LLMChatStartEvent,
    LLMCompletionEndEvent,
    LLMCompletionStartEvent,
)
from llama_index.core.instrumentation.events.rerank import ReRankStartEvent
from opentelemetry.instrumentation.utils import is_instrumentation_enabled
from opentelemetry.trace import Status, StatusCode, Tracer, set_span_in_context

from groundwire import semconv
from groundwire.capture import LIVE_CONTENT, CaptureConfig, LiveContent
from groundwire_llamaindex import _values
from groundwire_llamaindex._kinds import kind_of
from groundwire_llamaindex._record import Record
from groundwire_llamaindex._start import describe, start_values
from groundwire_llamaindex._stream import AsyncTokenStream, StreamOutcome, TokenStream
from groundwire_llamaindex._writing import (
    capture_input,
    capture_output,
    rerank_values,
    retrieval_values,
    token_attributes,
)

__all__ = ["Recorder"]

logger = logging.getLogger("groundwire_llamaindex")

_GENERATORS = (types.GeneratorType, types.AsyncGeneratorType)
_LIVE_KINDS = frozenset(
    {semconv.SPAN_KIND_CHAIN, semconv.SPAN_KIND_RETRIEVER, semconv.SPAN_KIND_RERANKER}
)
"""Kinds whose full values the assembler may need (query, contexts, answer)."""


class Recorder:
    """Keeps the open records of every LlamaIndex run and turns notices into span changes.

    Called by the span and event handlers from any thread; every run's records are its own,
    and the shared maps are only read and written one key at a time.
    """

    def __init__(self, tracer: Tracer, config: CaptureConfig) -> None:
        self._tracer = tracer
        self._config = config
        self._records: dict[str, Record] = {}
        self._pending: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        """Token generators made by a synthesizer call -> that call's LlamaIndex span id."""
        self._lock = threading.Lock()
        """Guards `_pending` and the hand-over between a chat stream's end and its call's exit."""
        self._on_event: dict[type[Any], Callable[[Record, Any], None] | None] = {
            LLMChatStartEvent: self._on_chat_start,
            LLMCompletionStartEvent: self._on_completion_start,
            LLMChatEndEvent: self._on_llm_end,
            LLMCompletionEndEvent: self._on_llm_end,
            ReRankStartEvent: self._on_rerank_start,
            ExceptionEvent: self._on_exception,
            StreamChatEndEvent: self._on_chat_stream_end,
            StreamChatErrorEvent: self._on_chat_stream_end,
        }

    # --- span notices -----------------------------------------------------------------------

    def enter(
        self, llama_id: str, arguments: Mapping[str, Any], instance: object, parent_id: str | None
    ) -> None:
        """A LlamaIndex call started: open a record, or alias it to its nearest record."""
        if not is_instrumentation_enabled():
            return
        parent = self._records.get(parent_id) if parent_id is not None else None
        kind = kind_of(instance) if instance is not None else None
        if parent is not None and kind == semconv.SPAN_KIND_LLM:
            parent = self._streaming_llm(parent, instance)
        if kind is None or (parent is not None and parent.instance_id == id(instance)):
            if parent is not None:
                self._records[llama_id] = parent
                parent.aliases.append(llama_id)
            return
        name, attributes = describe(llama_id, kind, instance, parent)
        span = self._tracer.start_span(
            name,
            context=set_span_in_context(parent.span) if parent is not None else None,
            attributes=attributes,
        )
        record = Record(llama_id, kind, span, id(instance), parent)
        if parent is not None:
            record.open.add(record)
        if record.recording:
            start_values(self._config, record, instance, arguments)
        self._records[llama_id] = record

    @staticmethod
    def _streaming_llm(parent: Record, instance: object) -> Record:
        """The LLM record an LLM call belongs to: its own stream's, when it runs inside it.

        `CustomLLM.astream_complete` reads `stream_complete` while its stream is consumed, so
        LlamaIndex parents that call to the reader (the synthesizer); both are one LLM call.
        """
        streaming = parent.streaming_llm
        if streaming is not None and not streaming.ended and streaming.instance_id == id(instance):
            return streaming
        return parent

    def exit(self, llama_id: str, result: object) -> None:
        """A LlamaIndex call returned `result`: end its record, or leave it waiting on a stream."""
        record = self._records.get(llama_id)
        if record is None:
            return
        if isinstance(result, _GENERATORS) and record.kind == semconv.SPAN_KIND_CHAIN:
            with self._lock:
                self._pending.setdefault(result, llama_id)
        stream = self._stream_of(result)
        if record.llama_id != llama_id:
            return
        if stream is not None:
            record.waiting = True
            stream.outcome.waiting.append(record)
            return
        if not record.recording:  # sampled out: nothing to write
            self.end(record)
            return
        if isinstance(result, StreamingAgentChatResponse):
            self._wait_for_chat(record, result)
            return
        kind = record.kind
        if kind == semconv.SPAN_KIND_RETRIEVER:
            self._end_retrieval(record, result)
        elif kind == semconv.SPAN_KIND_RERANKER:
            self._end_rerank(record, result)
        elif kind == semconv.SPAN_KIND_LLM:
            if semconv.OUTPUT_VALUE not in record.attributes:
                text = _values.llm_output_of(result)
                if text is not None:
                    capture_output(self._config, record, text, semconv.MIME_TEXT)
            if isinstance(result, _GENERATORS):
                record.waiting = True
                if record.parent is not None:
                    record.parent.streaming_llm = record
                weakref.finalize(result, self.end, record)
                return
        elif kind != semconv.SPAN_KIND_EMBEDDING:
            value = _values.output_of(result)
            if value is not None:
                capture_output(self._config, record, *value)
        self.end(record)

    def drop(self, llama_id: str, error: BaseException | None) -> None:
        """A LlamaIndex call raised `error`: end its record with status ERROR."""
        record = self._records.get(llama_id)
        if record is None or record.llama_id != llama_id:
            return
        if not record.recording:
            self.end(record)
        elif record.kind == semconv.SPAN_KIND_RETRIEVER:
            self._end_retrieval(record, (), error)
        elif record.kind == semconv.SPAN_KIND_RERANKER:
            self._end_rerank(record, (), error)
        else:
            self.end(record, error)

    # --- events -----------------------------------------------------------------------------

    def event(self, event: Any) -> None:
        """A LlamaIndex event: LLM prompts, answers and token counts; rerank settings."""
        cls = type(event)
        try:
            handler = self._on_event[cls]
        except KeyError:
            handler = next(
                (h for base, h in list(self._on_event.items()) if issubclass(cls, base)), None
            )
            self._on_event[cls] = handler
        if handler is None or event.span_id is None:
            return
        record = self._records.get(event.span_id)
        if record is not None and record.recording and not record.ended:
            handler(record, event)

    def _on_chat_start(self, record: Record, event: LLMChatStartEvent) -> None:
        """An LLM chat call's messages are its input (JSON)."""
        if record.kind == semconv.SPAN_KIND_LLM and record.full_input is None:
            capture_input(
                self._config, record, _values.messages_json(event.messages), semconv.MIME_JSON
            )

    def _on_completion_start(self, record: Record, event: LLMCompletionStartEvent) -> None:
        """An LLM completion call's prompt is its input (text)."""
        if record.kind == semconv.SPAN_KIND_LLM and record.full_input is None:
            capture_input(self._config, record, event.prompt, semconv.MIME_TEXT)

    def _on_llm_end(self, record: Record, event: LLMChatEndEvent | LLMCompletionEndEvent) -> None:
        """An LLM call's answer and token counts; ends a streamed call."""
        if record.kind != semconv.SPAN_KIND_LLM or event.response is None:
            return
        text = _values.llm_output_of(event.response)
        if text is not None:
            capture_output(self._config, record, text, semconv.MIME_TEXT)
        record.attributes.update(token_attributes(event.response))
        if record.waiting:
            self.end(record)

    def _on_rerank_start(self, record: Record, event: ReRankStartEvent) -> None:
        """A reranker's own top-n and model name."""
        if record.kind != semconv.SPAN_KIND_RERANKER:
            return
        record.attributes[semconv.RERANKER_TOP_K] = event.top_n
        if event.model_name:
            record.attributes[semconv.RERANKER_MODEL_NAME] = event.model_name

    def _on_chat_stream_end(
        self, record: Record, event: StreamChatEndEvent | StreamChatErrorEvent
    ) -> None:
        """A chat engine's stream was written out (in its own thread or task)."""
        error = event.exception if isinstance(event, StreamChatErrorEvent) else None
        with self._lock:
            record.chat_finished = True
            record.chat_error = error
            response = record.chat_response
        if response is not None:
            self._end_chat(record, response, error)

    def _wait_for_chat(self, record: Record, response: StreamingAgentChatResponse) -> None:
        """Leave the record open until its chat stream ends (or end it, if that came first).

        Chat engines write their stream out in a thread or task they start before returning,
        so the stream's end event can come before or after the call's exit.
        """
        with self._lock:
            if not record.chat_finished:
                record.waiting = True
                record.chat_response = response
                weakref.finalize(response, self.end, record)
                return
        self._end_chat(record, response, record.chat_error)

    def _end_chat(
        self, record: Record, response: StreamingAgentChatResponse, error: BaseException | None
    ) -> None:
        """End a chat engine's record with the answer its stream wrote."""
        if record.recording and isinstance(response.response, str):
            capture_output(self._config, record, response.response, semconv.MIME_TEXT)
        self.end(record, error)

    def _on_exception(self, record: Record, event: ExceptionEvent) -> None:
        """A streamed LLM call failed while its stream was read."""
        if record.waiting and record.kind == semconv.SPAN_KIND_LLM:
            self.end(record, event.exception)

    # --- ending -----------------------------------------------------------------------------

    def _end_retrieval(
        self, record: Record, nodes: object, error: BaseException | None = None
    ) -> None:
        """End a retriever's record with its query and the nodes it returned."""
        retrieval_values(self._config, record, nodes)
        self.end(record, error)

    def _end_rerank(
        self, record: Record, nodes: object, error: BaseException | None = None
    ) -> None:
        """End a reranker's record with its query and input and output nodes."""
        rerank_values(self._config, record, nodes)
        self.end(record, error)

    def finish_stream(self, record: Record, text: str | None, error: BaseException | None) -> None:
        """End a record that waited for a streamed answer."""
        if text is not None and not record.ended:
            capture_output(self._config, record, text, semconv.MIME_TEXT)
        self.end(record, error)

    def end(self, record: Record, error: BaseException | None = None) -> None:
        """End the record's span (status ERROR and an exception event when `error` is set)."""
        if record.ended:
            return
        record.ended = True
        try:
            if record.parent is None:
                for other in list(record.open):
                    self.end(other)
            else:
                record.open.discard(record)
            span = record.span
            if error is not None and not isinstance(error, GeneratorExit):
                span.record_exception(error)
                record.attributes[semconv.ERROR_TYPE] = type(error).__qualname__
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            if record.attributes:
                span.set_attributes(record.attributes)
            if record.altered and LIVE_CONTENT.enabled and record.kind in _LIVE_KINDS:
                context = span.get_span_context()
                LIVE_CONTENT.put(
                    (context.trace_id, context.span_id),
                    LiveContent(
                        input=record.full_input,
                        output=record.full_output,
                        documents=record.documents,
                    ),
                )
            span.end()
        finally:
            records = self._records
            for alias in record.aliases:
                records.pop(alias, None)
            records.pop(record.llama_id, None)

    def close(self) -> None:
        """End every open record (on uninstrument or dispatcher shutdown)."""
        for record in list(self._records.values()):
            self.end(record)

    # --- streams ----------------------------------------------------------------------------

    def _stream_of(self, result: object) -> TokenStream | AsyncTokenStream | None:
        """The stream wrapper of a streaming response, installing one on first sight."""
        if isinstance(result, StreamingResponse):
            inner: Any = result.response_gen
            if isinstance(inner, TokenStream) or inner is None:
                return inner
            stream: TokenStream | AsyncTokenStream = TokenStream(
                inner, self._pending_span_id(inner), StreamOutcome(self.finish_stream)
            )
        elif isinstance(result, AsyncStreamingResponse):
            inner = result.response_gen
            if isinstance(inner, AsyncTokenStream) or inner is None:
                return inner
            stream = AsyncTokenStream(
                inner, self._pending_span_id(inner), StreamOutcome(self.finish_stream)
            )
        else:
            return None
        result.response_gen = stream  # type: ignore[assignment]
        return stream

    def _pending_span_id(self, generator: object) -> str | None:
        """The synthesizer span id that made `generator`, forgetting it."""
        with self._lock:
            try:
                return self._pending.pop(generator, None)
            except TypeError:  # not weak-referenceable: never pending
                return None
