"""LangChain 1.x and LangGraph apps built the way their docs teach, with stand-in models.

Each `run_*` runs one app on one or more questions and returns what the app itself got back
(`Truth`: the question, the documents the model was given, the final answer), computed from the
app's own objects (tool messages, artifacts, graph state), never from spans.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import BaseTool, create_retriever_tool, tool
from langchain_core.vectorstores import InMemoryVectorStore

from tests.test_assembly_langchain import CORPUS, KeywordRetriever


@dataclass(frozen=True)
class Truth:
    """One turn as the app saw it: question, documents given to the model, final answer."""

    query: str
    contexts: list[str]
    answer: str


class ToolCallingFake(FakeMessagesListChatModel):
    """A scripted chat model that accepts `bind_tools` (the agent builders call it)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFake:  # type: ignore[override]
        """Tools are already part of the script: return the model itself."""
        return self


def _call(name: str, query: str, call_id: str) -> dict[str, Any]:
    return {"name": name, "args": {"query": query}, "id": call_id, "type": "tool_call"}


def scripted_model(tool_name: str, queries: Sequence[str], answer: str) -> ToolCallingFake:
    """First one AI message calling the tool for each query (all at once), then the answer."""
    calls = [_call(tool_name, q, f"call_{i}") for i, q in enumerate(queries)]
    return ToolCallingFake(responses=[AIMessage(content="", tool_calls=calls), AIMessage(answer)])


def retriever_tool() -> BaseTool:
    """`create_retriever_tool` over the keyword retriever (a retriever run inside the tool)."""
    return create_retriever_tool(
        KeywordRetriever(), "search_capitals", "Search facts about capitals."
    )


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=16))
    store.add_documents(
        [Document(page_content=t, metadata={"row": i}) for i, t in enumerate(CORPUS)]
    )
    return store


STORE = _store()


@tool(response_format="content_and_artifact")
def search_store(query: str) -> tuple[str, list[Document]]:
    """Search the store directly (no retriever run): text for the model, documents as artifact."""
    documents = STORE.similarity_search(query, k=2)
    return "\n\n".join(d.page_content for d in documents), documents


def _tool_contexts(messages: Sequence[BaseMessage], split_retrieved: bool) -> list[str]:
    """What the tools gave the model: artifact documents, else retrieved documents, else text."""
    contexts: list[str] = []
    for message in messages:
        if not isinstance(message, ToolMessage):
            continue
        artifact = message.artifact
        if isinstance(artifact, list) and artifact and isinstance(artifact[0], Document):
            contexts.extend(d.page_content for d in artifact)
        elif split_retrieved:
            contexts.extend(str(message.content).split("\n\n"))
        else:
            contexts.append(str(message.content))
    return contexts


def _agent_truth(question: str, result: dict[str, Any]) -> Truth:
    messages: list[BaseMessage] = result["messages"]
    final = messages[-1]
    assert isinstance(final, AIMessage) and not final.tool_calls
    return Truth(question, _tool_contexts(messages, split_retrieved=True), str(final.content))


def react_agent(tools: list[BaseTool], model: ToolCallingFake) -> Any:
    """LangGraph's prebuilt ReAct agent."""
    from langgraph.prebuilt import create_react_agent

    return create_react_agent(model, tools)


def create_agent_app(tools: list[BaseTool], model: ToolCallingFake) -> Any:
    """LangChain 1.x `create_agent`."""
    from langchain.agents import create_agent

    return create_agent(model, tools)


AgentBuilder = Callable[[list[BaseTool], ToolCallingFake], Any]

QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."


def run_agent(
    builder: AgentBuilder,
    tool_: BaseTool,
    queries: Sequence[str] = ("capital of France",),
    question: str = QUESTION,
    answer: str = ANSWER,
    mode: str = "invoke",
) -> Truth:
    """One agent turn: the model calls the tool once per query, then answers."""
    agent = builder([tool_], scripted_model(tool_.name, queries, answer))
    payload = {"messages": [{"role": "user", "content": question}]}
    if mode == "invoke":
        result = agent.invoke(payload)
    elif mode == "ainvoke":
        result = asyncio.run(agent.ainvoke(payload))
    else:  # stream: the final state is the last "values" chunk
        result = {}
        for chunk in agent.stream(payload, stream_mode="values"):
            result = chunk
    return _agent_truth(question, result)


class RagState(TypedDict, total=False):
    """The LangGraph RAG tutorial's state."""

    question: str
    context: list[Document]
    answer: str


PROMPT = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")


def rag_graph(answer: str, use_retriever: bool) -> Any:
    """retrieve -> generate, as LangGraph's RAG tutorial builds it."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langgraph.graph import START, StateGraph

    model = FakeListChatModel(responses=[answer])

    def retrieve(state: RagState) -> RagState:
        if use_retriever:
            return {"context": KeywordRetriever().invoke(state["question"])}
        return {"context": STORE.similarity_search(state["question"], k=2)}

    def generate(state: RagState) -> RagState:
        text = "\n\n".join(d.page_content for d in state["context"])
        messages = PROMPT.invoke({"question": state["question"], "context": text})
        return {"answer": str(model.invoke(messages).content)}

    builder = StateGraph(RagState).add_sequence([retrieve, generate])
    builder.add_edge(START, "retrieve")
    return builder.compile()


def run_rag_graph(
    question: str = QUESTION, answer: str = ANSWER, use_retriever: bool = False
) -> Truth:
    """One question through the tutorial graph; truth from the final state."""
    state = rag_graph(answer, use_retriever).invoke({"question": question})
    return Truth(question, [d.page_content for d in state["context"]], state["answer"])


def run_conversation(questions: Sequence[str], answers: Sequence[str]) -> list[Truth]:
    """A ReAct agent with a LangGraph checkpointer: one thread, one invocation per question (the
    history is the checkpointer's); each message searches the store for its question."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    responses: list[BaseMessage] = []
    for i, (question, answer) in enumerate(zip(questions, answers, strict=True)):
        call = _call(retriever_tool().name, question, f"call_{i}")
        responses += [AIMessage(content="", tool_calls=[call]), AIMessage(answer)]
    agent = create_react_agent(
        ToolCallingFake(responses=responses), [retriever_tool()], checkpointer=InMemorySaver()
    )
    config = {"configurable": {"thread_id": "conversation-1"}}
    truths = []
    for question in questions:
        result = agent.invoke({"messages": [{"role": "user", "content": question}]}, config)
        messages = result["messages"]
        last_user = max(i for i, m in enumerate(messages) if m.type == "human")
        truths.append(_agent_truth(question, {"messages": messages[last_user:]}))
    return truths
