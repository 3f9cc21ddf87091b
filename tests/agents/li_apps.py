"""LlamaIndex agents built the way its docs teach (`FunctionAgent`, `ReActAgent` with a
`QueryEngineTool`), with a scripted stand-in model.

`run_*` returns what the app itself got back (`Truth`): the user's question, the source nodes of
every tool call's response (the documents the model was given) and the agent's final response.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core import VectorStoreIndex
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms import MockLLM
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import QueryEngineTool

from tests.agents.lc_apps import Truth
from tests.test_assembly_llamaindex import build_index, engine

QUESTION = "What is the capital of Spain?"
ANSWER = "Madrid is the capital of Spain."
TOOL = "capitals"


def _has_tool_result(messages: Sequence[ChatMessage]) -> bool:
    return any(m.role == MessageRole.TOOL for m in messages) or any(
        (m.content or "").lstrip().startswith("Observation:") for m in messages
    )


def function_llm(queries: Sequence[str], answer: str = ANSWER) -> MockFunctionCallingLLM:
    """Calls the tool once per query (in one message), then answers after the results."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if _has_tool_result(messages):
            return ChatMessage(role=MessageRole.ASSISTANT, content=answer)
        blocks = [
            ToolCallBlock(tool_call_id=f"call_{i}", tool_name=TOOL, tool_kwargs={"input": q})
            for i, q in enumerate(queries)
        ]
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)  # type: ignore[arg-type]

    return MockFunctionCallingLLM(response_generator=respond, is_chat_model=True)


def react_llm(query: str, answer: str = ANSWER) -> MockFunctionCallingLLM:
    """Writes a ReAct action for the tool, then the answer after the observation."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        if _has_tool_result(messages):
            text = f"Thought: I can answer without using any more tools.\nAnswer: {answer}"
        else:
            text = (
                "Thought: I need to use a tool to help me answer the question.\n"
                f'Action: {TOOL}\nAction Input: {{"input": "{query}"}}'
            )
        return ChatMessage(role=MessageRole.ASSISTANT, content=text)

    return MockFunctionCallingLLM(response_generator=respond, is_chat_model=True)


def query_tool(index: VectorStoreIndex) -> QueryEngineTool:
    """The docs' `QueryEngineTool` over a query engine of the index."""
    return QueryEngineTool.from_defaults(
        engine(index), name=TOOL, description="Answers questions about capitals."
    )


async def _run(agent: Any, question: str) -> Truth:
    handler = agent.run(user_msg=question)
    contexts: list[str] = []
    async for event in handler.stream_events():
        if isinstance(event, ToolCallResult):
            raw = event.tool_output.raw_output
            contexts.extend(n.node.get_content() for n in getattr(raw, "source_nodes", []))
    response = await handler
    return Truth(question, contexts, str(response.response.content))


def run_function_agent(
    index: VectorStoreIndex,
    queries: Sequence[str] = ("capital of Spain",),
    question: str = QUESTION,
) -> Truth:
    """`FunctionAgent` with a `QueryEngineTool`: one turn, one tool call per query."""
    agent = FunctionAgent(tools=[query_tool(index)], llm=function_llm(queries))
    return asyncio.run(_run(agent, question))


def run_react_agent(index: VectorStoreIndex, question: str = QUESTION) -> Truth:
    """`ReActAgent` with a `QueryEngineTool`: one turn, one tool call."""
    agent = ReActAgent(tools=[query_tool(index)], llm=react_llm("capital of Spain"))
    return asyncio.run(_run(agent, question))


__all__ = ["MockLLM", "build_index", "run_function_agent", "run_react_agent"]
