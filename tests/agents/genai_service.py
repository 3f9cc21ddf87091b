"""A service that follows only the OpenTelemetry GenAI conventions, as any language's SDK writes
them (no OpenInference, no framework): a `POST /ask` server span around a `retrieval` span whose
`gen_ai.retrieval.documents` are `{id, score}` only, and a `chat` span whose
`gen_ai.input.messages` carry the passages (system message parts) and the question, with the
answer in `gen_ai.output.messages` (content on spans, as `opentelemetry-util-genai` 1.3 writes it).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from opentelemetry.trace import SpanKind, Tracer

from tests.agents.lc_apps import Truth

PASSAGES = (
    "The Eiffel Tower is 330 metres tall.",
    "It was completed in 1889 for the World's Fair.",
)
QUESTION = "How tall is the Eiffel Tower?"
ANSWER = 'It is "330 metres tall", completed in 1889.'


def _parts(texts: Sequence[str]) -> list[dict[str, str]]:
    return [{"type": "text", "content": text} for text in texts]


def _chat(tracer: Tracer, messages: list[Any], output: list[Any], **extra: str) -> None:
    """One `chat` span with its input and output messages, as a GenAI SDK writes it."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": json.dumps(messages),
        "gen_ai.output.messages": json.dumps(output),
        **extra,
    }
    with tracer.start_as_current_span(
        "chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes
    ):
        pass


def ask(
    tracer: Tracer,
    question: str = QUESTION,
    passages: Sequence[str] = PASSAGES,
    answer: str = ANSWER,
    query_text: bool = True,
) -> Truth:
    """One request: retrieve (ids and scores only on the span), then chat with the passages."""
    with tracer.start_as_current_span(
        "POST /ask",
        kind=SpanKind.SERVER,
        attributes={"http.request.method": "POST", "http.route": "/ask", "url.path": "/ask"},
    ) as server:
        retrieval = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "kb",
            "gen_ai.retrieval.documents": json.dumps(
                [{"id": f"doc-{i}", "score": 0.9 - i / 10} for i in range(len(passages))]
            ),
        }
        if query_text:
            retrieval["gen_ai.retrieval.query.text"] = question
        client = SpanKind.CLIENT
        with tracer.start_as_current_span("retrieval kb", kind=client, attributes=retrieval):
            pass
        messages = [
            {"role": "system", "parts": _parts(passages)},
            {"role": "user", "parts": _parts([question])},
        ]
        output = [{"role": "assistant", "parts": _parts([answer]), "finish_reason": "stop"}]
        _chat(tracer, messages, output, **{"gen_ai.provider.name": "openai"})
        server.set_attribute("http.response.status_code", 200)
    return Truth(question, list(passages), answer)


def ask_agent(
    tracer: Tracer,
    question: str = QUESTION,
    passages: Sequence[str] = PASSAGES,
    answer: str = ANSWER,
) -> Truth:
    """An agent-shaped request: the model asks for a tool, the tool's result (the passages,
    recorded as `gen_ai.tool.call.result`) goes back to it, and it answers. No retrieval span."""
    user = {"role": "user", "parts": _parts([question])}
    call = {"type": "tool_call", "id": "call_1", "name": "search", "arguments": {"q": question}}
    result = "\n\n".join(passages)
    with tracer.start_as_current_span("POST /agent", kind=SpanKind.SERVER):
        _chat(
            tracer, [user], [{"role": "assistant", "parts": [call], "finish_reason": "tool_call"}]
        )
        with tracer.start_as_current_span(
            "execute_tool search",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": json.dumps({"q": question}),
                "gen_ai.tool.call.result": result,
            },
        ):
            pass
        response = {"type": "tool_call_response", "id": "call_1", "response": result}
        history = [
            user,
            {"role": "assistant", "parts": [call]},
            {"role": "tool", "parts": [response]},
        ]
        final = [{"role": "assistant", "parts": _parts([answer]), "finish_reason": "stop"}]
        _chat(tracer, history, final)
    return Truth(question, [result], answer)
