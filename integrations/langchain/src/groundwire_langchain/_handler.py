"""The LangChain callback handler that turns every run into an OpenTelemetry span.

Each run's span is parented explicitly: on the span of the run's `parent_run_id` when we traced
it, else on the OpenTelemetry context current when the run started (so an application span around
`chain.invoke` becomes the root's parent). The OTel context is never attached inside a callback,
so an error between two callbacks cannot leave a context attached. Values are written when the
run ends, once, in one `set_attributes` call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.outputs import LLMResult
from opentelemetry import trace
from opentelemetry.trace import Span, TracerProvider

from groundwire import semconv
from groundwire.capture import (
    LIVE_CONTENT,
    CaptureConfig,
    retrieval_span_name,
)
from groundwire_langchain._attributes import (
    llm_output_value,
    model_name,
    request_attributes,
    response_attributes,
)
from groundwire_langchain._recording import (
    Attributes,
    collect,
    contexts,
    record_error,
    run_name,
    session_attributes,
    write_retrieval,
    write_values,
)
from groundwire_langchain._returned import returned_documents
from groundwire_langchain.version import __version__

__all__ = ["GroundwireCallbackHandler"]

logger = logging.getLogger("groundwire_langchain")

_KEPT: Any = object()
"""`_end`'s default inputs: the ones the run's start callback gave."""

FRAMEWORK = "langchain"
"""Value of `groundwire.framework` on the root span of every LangChain run tree."""


@dataclass(slots=True)
class _Run:
    """One open run: its span, what kind of run it is, its name and its input."""

    span: Span
    kind: str
    name: str
    inputs: Any


class GroundwireCallbackHandler(BaseCallbackHandler):
    """LangChain callbacks in, OpenTelemetry spans out; pass it as `callbacks=[handler]`.

    `LangChainInstrumentor().instrument()` adds one of these to every run by itself; create your
    own only to trace selected calls. Privacy switches left as None are read from the
    `GROUNDWIRE_HIDE_*` and `GROUNDWIRE_MAX_VALUE_LENGTH` environment variables.
    """

    run_inline = True
    """Called in the run's own thread or task, in order, even from async runs."""
    raise_error = False

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        hide_inputs: bool | None = None,
        hide_outputs: bool | None = None,
        hide_document_text: bool | None = None,
        max_value_length: int | None = None,
    ) -> None:
        super().__init__()
        switches = {
            "hide_inputs": hide_inputs,
            "hide_outputs": hide_outputs,
            "hide_document_text": hide_document_text,
        }
        for option, value in switches.items():
            if value is not None and not isinstance(value, bool):
                raise TypeError(f"{option} must be True, False or None, got {value!r}")
        self.config = CaptureConfig.from_env(
            hide_inputs=hide_inputs,
            hide_outputs=hide_outputs,
            hide_document_text=hide_document_text,
            max_value_length=max_value_length,
        )
        """The privacy switches in force."""
        config = self.config
        self._lossy = (
            config.hide_inputs
            or config.hide_outputs
            or config.hide_document_text
            or config.max_value_length is not None
        )
        self._tracer = trace.get_tracer(
            "groundwire_langchain", __version__, tracer_provider=tracer_provider
        )
        self._runs: dict[UUID, _Run] = {}

    @property
    def open_runs(self) -> int:
        """How many runs have started and not yet ended (0 between requests)."""
        return len(self._runs)

    # --- chains --------------------------------------------------------------------------------

    def on_chain_start(
        self,
        serialized: dict[str, Any],
        inputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open a CHAIN span named after the runnable."""
        name = run_name(serialized, kwargs, "chain")
        attributes: Attributes = {semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_CHAIN}
        self._start(run_id, parent_run_id, name, name, attributes, inputs, metadata)

    def on_chain_end(
        self,
        outputs: dict[str, Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Close the chain's span with its input and output (streams send the input only now)."""
        self._end(run_id, outputs, inputs=kwargs.get("inputs", _KEPT))

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Close the chain's span with status ERROR and an exception event."""
        self._end(run_id, None, inputs=kwargs.get("inputs", _KEPT), error=error)

    # --- retrievers ----------------------------------------------------------------------------

    def on_retriever_start(
        self,
        serialized: dict[str, Any],
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open a RETRIEVER span, `retrieval {retriever name}`."""
        name = run_name(serialized, kwargs, "retriever")
        attributes: Attributes = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_RETRIEVER,
            semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_RETRIEVAL,
            semconv.GEN_AI_DATA_SOURCE_ID: name,
        }
        span_name = retrieval_span_name(name)
        self._start(run_id, parent_run_id, span_name, name, attributes, query, metadata)

    def on_retriever_end(
        self,
        documents: Sequence[Document],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Close the retriever's span with the query and the documents in rank order."""
        self._end(run_id, None, documents=documents)

    # --- models --------------------------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open an LLM span, `chat {model}`; LangChain calls this once per prompt."""
        prompt = messages[0] if len(messages) == 1 else messages
        operation = semconv.GEN_AI_OPERATION_CHAT
        self._start_llm(operation, serialized, prompt, run_id, parent_run_id, metadata, kwargs)

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open an LLM span for a text-completion model, `text_completion {model}`."""
        prompt = prompts[0] if len(prompts) == 1 else prompts
        operation = semconv.GEN_AI_OPERATION_TEXT_COMPLETION
        self._start_llm(operation, serialized, prompt, run_id, parent_run_id, metadata, kwargs)

    def on_llm_end(
        self,
        response: LLMResult,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """Close the model's span with its answer (whole, also when streamed) and token counts."""
        self._end(run_id, response)

    # --- tools ---------------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Open a TOOL span, `execute_tool {tool name}`."""
        name = run_name(serialized, kwargs, "tool")
        attributes: Attributes = {
            semconv.OPENINFERENCE_SPAN_KIND: semconv.SPAN_KIND_TOOL,
            semconv.TOOL_NAME: name,
            semconv.GEN_AI_OPERATION_NAME: semconv.GEN_AI_OPERATION_EXECUTE_TOOL,
            semconv.GEN_AI_TOOL_NAME: name,
        }
        call_id = kwargs.get("tool_call_id")
        if isinstance(call_id, str) and call_id:
            attributes[semconv.GEN_AI_TOOL_CALL_ID] = call_id
        span_name = f"{semconv.GEN_AI_OPERATION_EXECUTE_TOOL} {name}"
        self._start(run_id, parent_run_id, span_name, name, attributes, input_str, metadata)

    def on_tool_end(
        self,
        output: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Close the tool's span with its output."""
        self._end(run_id, output)

    # --- errors of models, retrievers and tools -----------------------------------------------

    def on_llm_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Close the run's span (a model's, a retriever's or a tool's) with status ERROR and an
        exception event."""
        self._end(run_id, None, error=error)

    on_retriever_error = on_llm_error
    on_tool_error = on_llm_error

    # --- span lifecycle ------------------------------------------------------------------------

    def _end(
        self,
        run_id: UUID,
        output: Any,
        *,
        inputs: Any = _KEPT,
        documents: Sequence[Document] | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Close the run's span (when we traced the run) with its inputs (`_KEPT`: the ones its
        start gave), output, documents or error."""
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        given = run.inputs if inputs is _KEPT else inputs
        self._finish(run, given, output, documents=documents, error=error)

    def _start_llm(
        self,
        operation: str,
        serialized: Mapping[str, Any] | None,
        prompt: Any,
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
    ) -> None:
        name = run_name(serialized, kwargs, "llm")
        model = model_name(metadata, kwargs.get("invocation_params"))
        attributes: Attributes = {}
        collect(attributes, request_attributes(operation, model, metadata))
        span_name = f"{operation} {model}" if model else name
        self._start(run_id, parent_run_id, span_name, name, attributes, prompt, metadata)

    def _start(
        self,
        run_id: UUID,
        parent_run_id: UUID | None,
        span_name: str,
        name: str,
        attributes: Attributes,
        inputs: Any,
        metadata: Mapping[str, Any] | None,
    ) -> None:
        """Open the run's span under its parent run's span, or under the current context."""
        parent = self._runs.get(parent_run_id) if parent_run_id is not None else None
        if parent is None:
            attributes[semconv.GROUNDWIRE_FRAMEWORK] = FRAMEWORK
            if metadata:
                collect(attributes, session_attributes(metadata))
            span = self._tracer.start_span(span_name, attributes=attributes)
        else:
            context = trace.set_span_in_context(parent.span)
            span = self._tracer.start_span(span_name, context=context, attributes=attributes)
        kind = attributes.get(semconv.OPENINFERENCE_SPAN_KIND, semconv.SPAN_KIND_CHAIN)
        self._runs[run_id] = _Run(span, str(kind), name, inputs)

    def _finish(
        self,
        run: _Run,
        inputs: Any,
        outputs: Any,
        *,
        documents: Sequence[Document] | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Write the run's values onto its span and end it; the span ends whatever happens."""
        span = run.span
        try:
            if span.is_recording():
                attributes: Attributes = {}
                if run.kind == semconv.SPAN_KIND_RETRIEVER:
                    write_retrieval(
                        span, self.config, self._lossy, run.name, inputs, documents, attributes
                    )
                else:
                    if run.kind == semconv.SPAN_KIND_LLM and isinstance(outputs, LLMResult):
                        collect(attributes, response_attributes(outputs))
                        outputs = llm_output_value(outputs)
                    returned = contexts(returned_documents(run.kind, outputs) or ())
                    live = self._lossy and LIVE_CONTENT.enabled
                    write_values(span, self.config, live, inputs, outputs, attributes, returned)
                span.set_attributes(attributes)
        except Exception:
            logger.debug("could not record the values of run %r", run.name, exc_info=True)
        try:
            if error is not None and span.is_recording():
                record_error(span, error)
        finally:
            span.end()
