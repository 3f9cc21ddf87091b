"""Documents that reach the model without a retriever run: tool results and graph state.

Agents get their contexts from tool calls (`create_retriever_tool`, a `@tool` returning
`(text, documents)` as `response_format="content_and_artifact"`, a LlamaIndex `QueryEngineTool`),
and graphs carry retrieved documents in their state (LangGraph's RAG tutorial: a `retrieve` node
that returns `{"context": [Document, ...]}` from `similarity_search`). These readers find them in a
span's decoded output:

- `tool_documents`: a tool's result: the documents of its artifact when it has any, else its text
  (a `ToolMessage` in any serialisation, a LlamaIndex `ToolOutput`, or plain text), one context;
- `state_documents`: LangChain `Document`s anywhere in a step's output (`page_content`, as
  OpenInference, OpenLLMetry and groundwire serialise them), in order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from groundwire._types import Context
from groundwire.assembly._documents import metadata
from groundwire.assembly._extract import answer_text, nested_values

__all__ = ["DOCUMENT_MARKER", "state_documents", "tool_documents"]

DOCUMENT_MARKER: Final = "page_content"
"""The field every serialisation of a LangChain `Document` has (a cheap test on raw text)."""
_MAX_DEPTH: Final = 8
_TOOL_ROLES: Final = frozenset({"tool", "toolmessage"})
_TEXT_KEYS: Final = ("content", "blocks", "text", "output", "result")


def tool_documents(value: Any) -> list[Context] | None:
    """The contexts a tool call gave the model, from its decoded output; None if unreadable."""
    message = _tool_message(value, 0)
    if message is not None:
        artifact = list(_documents(message.get("artifact"), 0))
        if artifact:
            return _ranked(artifact)
        value = message.get("content")
    text = _text(value)
    return None if text is None else [Context(text=text, rank=0)]


def state_documents(value: Any) -> list[Context] | None:
    """The LangChain documents inside a step's decoded output, in order; None if there are none."""
    found = list(_documents(value, 0))
    return _ranked(found) if found else None


def _tool_message(value: Any, depth: int) -> Mapping[Any, Any] | None:
    """The fields of a `ToolMessage` (plain, `{"type", "data"}` or lc `kwargs`), maybe wrapped."""
    if depth > 2 or not isinstance(value, Mapping):
        return None
    role = value.get("role", value.get("type"))
    for fields in (value, value.get("data"), value.get("kwargs")):
        if not isinstance(fields, Mapping) or "content" not in fields:
            continue
        kind = fields.get("type", role)
        if isinstance(kind, str) and kind.lower() in _TOOL_ROLES:
            return fields
        lc_id = value.get("id")
        if isinstance(lc_id, list) and lc_id and lc_id[-1] == "ToolMessage":
            return fields
    if "output" in value:  # OpenLLMetry wraps a tool's result as {"output": ..., "kwargs": ...}
        return _tool_message(value["output"], depth + 1)
    return None


def _text(value: Any) -> str | None:
    """A tool result's text: a string, text parts or blocks, or a known text field."""
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, Mapping):
        for key in _TEXT_KEYS:
            if key in value:
                text = _blocks(value[key]) if key == "blocks" else answer_text(value[key])
                if text is not None:
                    return text
        return None
    return answer_text(value)


def _blocks(blocks: Any) -> str | None:
    """The joined text of LlamaIndex content blocks (`{"block_type": "text", "text": ...}`)."""
    if not isinstance(blocks, Sequence) or isinstance(blocks, str | bytes):
        return None
    texts = [
        block["text"]
        for block in blocks
        if isinstance(block, Mapping) and isinstance(block.get("text"), str)
    ]
    joined = "".join(texts)
    return joined if joined.strip() else None


def _documents(value: Any, depth: int) -> Iterator[Context]:
    """Every LangChain document in `value`, depth first, in order."""
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        built = _document(value)
        if built is not None:
            yield built
            return
    for item in nested_values(value):
        yield from _documents(item, depth + 1)


def _document(value: Mapping[Any, Any]) -> Context | None:
    """One `Context` from a serialised `Document` (fields at the top or in lc `kwargs`)."""
    fields = value
    if not isinstance(fields.get(DOCUMENT_MARKER), str):
        fields = value.get("kwargs")  # type: ignore[assignment]
        if not isinstance(fields, Mapping) or not isinstance(fields.get(DOCUMENT_MARKER), str):
            return None
    text: str = fields[DOCUMENT_MARKER]
    doc_id = fields.get("id")
    meta = metadata(fields.get("metadata"))
    return Context(
        text=text,
        id=str(doc_id) if isinstance(doc_id, str | int) and not isinstance(doc_id, bool) else None,
        metadata=meta or {},
    )


def _ranked(documents: list[Context]) -> list[Context]:
    """The documents with their rank set to their position."""
    return [doc.model_copy(update={"rank": rank}) for rank, doc in enumerate(documents)]
