"""What a finished LangChain run writes onto its span: values, documents, errors, names.

Each writer fails on its own: a value that cannot be converted, or an attribute builder that
raises, loses only itself (logged at debug level), never the span or the app's run.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from groundwire import semconv
from groundwire._types import Context
from groundwire.capture import (
    LIVE_CONTENT,
    Attribute,
    CaptureConfig,
    LiveContent,
    document_attributes,
    retrieval_attributes,
)
from groundwire_langchain._values import to_context, to_text

__all__ = [
    "Attributes",
    "collect",
    "contexts",
    "record_error",
    "run_name",
    "session_attributes",
    "write_retrieval",
    "write_values",
]

logger = logging.getLogger("groundwire_langchain")

Attributes = dict[str, AttributeValue]
"""The attributes a span gets when its run ends, written in one `set_attributes` call."""


def write_values(
    span: Span,
    config: CaptureConfig,
    live: bool,
    inputs: Any,
    outputs: Any,
    attributes: Attributes,
    returned: Sequence[Context] = (),
) -> None:
    """`input.value` / `output.value` as the privacy switches allow; full text to the store.

    Documents a tool or node `returned` are recorded as OpenInference's document list.
    """
    input_text = _write_value(
        inputs, config, live, config.hide_inputs, semconv.INPUT_VALUE, semconv.INPUT_MIME_TYPE,
        attributes,
    )  # fmt: skip
    output_text = _write_value(
        outputs, config, live, config.hide_outputs, semconv.OUTPUT_VALUE,
        semconv.OUTPUT_MIME_TYPE, attributes,
    )  # fmt: skip
    if returned:
        prefix = semconv.RETRIEVAL_DOCUMENTS_PREFIX
        collect(attributes, document_attributes(prefix, returned, config))
    if live:
        documents = tuple(returned) if returned else None
        keep_live(span, LiveContent(input=input_text, output=output_text, documents=documents))


def _write_value(
    value: Any,
    config: CaptureConfig,
    live: bool,
    hidden: bool,
    key: str,
    mime_key: str,
    attributes: Attributes,
) -> str | None:
    """One value as text on `key` (unless hidden); the full text, for the live store."""
    if value is None or not (live or not hidden):
        return None
    converted = text_of(value)
    if converted is None:
        return None
    text, mime = converted
    if not hidden:
        attributes[key] = config.text(text)
        attributes[mime_key] = mime
    return text


def write_retrieval(
    span: Span,
    config: CaptureConfig,
    lossy: bool,
    name: str,
    query: Any,
    documents: Sequence[Document] | None,
    attributes: Attributes,
) -> None:
    """The query and documents in OpenInference and GenAI names (see `groundwire.capture`)."""
    text = query if isinstance(query, str) else None
    found = contexts(documents or ())
    collect(attributes, retrieval_attributes(text, found, config, data_source_id=name))
    if documents is None:  # failed: it returned no list, not an empty one
        attributes.pop(semconv.GEN_AI_RETRIEVAL_DOCUMENTS, None)
    if lossy and LIVE_CONTENT.enabled:
        keep_live(span, LiveContent(input=text, documents=tuple(found)))


_SESSION_KEYS = ("session_id", "thread_id", "conversation_id")
"""Run metadata keys that name the conversation, in order of preference."""


def session_attributes(metadata: Mapping[str, Any]) -> Iterator[Attribute]:
    """`session.id` and `user.id` from the root run's metadata, as Phoenix groups sessions."""
    for key in _SESSION_KEYS:
        value = metadata.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            yield semconv.SESSION_ID, str(value)
            break
    user = metadata.get("user_id")
    if isinstance(user, str | int) and not isinstance(user, bool) and str(user):
        yield semconv.USER_ID, str(user)


def contexts(documents: Sequence[Document]) -> list[Context]:
    """The retrieved documents as contexts, ranked; a malformed document loses only itself."""
    contexts: list[Context] = []
    for document in documents:
        try:
            contexts.append(to_context(document, len(contexts)))
        except Exception:
            logger.debug("skipped a retrieved %s", type(document).__name__, exc_info=True)
    return contexts


def text_of(value: Any) -> tuple[str, str] | None:
    """`to_text`, or None when the value cannot be written (only that value is lost)."""
    try:
        return to_text(value)
    except Exception:
        logger.debug("could not write a %s value", type(value).__name__, exc_info=True)
        return None


def keep_live(span: Span, content: LiveContent) -> None:
    context = span.get_span_context()
    LIVE_CONTENT.put((context.trace_id, context.span_id), content)


def collect(attributes: Attributes, pairs: Iterator[Attribute]) -> None:
    """Add one builder's pairs; if the builder fails, only its remaining pairs are lost."""
    try:
        for key, value in pairs:
            attributes[key] = value
    except Exception:
        logger.debug("an attribute builder failed", exc_info=True)


def record_error(span: Span, error: BaseException) -> None:
    span.record_exception(error)
    span.set_attribute(semconv.ERROR_TYPE, type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


def run_name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any], default: str) -> str:
    """The run's name as LangChain reports it: `name`, else the serialized name or class path."""
    name = kwargs.get("name")
    if isinstance(name, str) and name:
        return name
    if isinstance(serialized, Mapping):
        name = serialized.get("name")
        if isinstance(name, str) and name:
            return name
        path = serialized.get("id")
        if isinstance(path, list) and path:
            return str(path[-1])
    return default
