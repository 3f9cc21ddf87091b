"""A small real RAG app built from LangChain parts, the subject of the integration tests.

A keyword `BaseRetriever` over an in-test corpus, a `ChatPromptTemplate`, a fake chat model from
`langchain_core.language_models.fake_chat_models` and LCEL composition ending in
`StrOutputParser`, as the LangChain tutorials build it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnablePassthrough

CORPUS = (
    Document(page_content="Paris is the capital of France.", metadata={"source": "geo.txt"}),
    Document(id="eiffel", page_content="The Eiffel Tower is in Paris and opened in 1889."),
    Document(page_content="Berlin is the capital of Germany.", metadata={"id": 7, "score": 0.5}),
    Document(page_content="Rome is the capital of Italy.", metadata={"source": "geo.txt"}),
)
"""The corpus: one document with a LangChain id, one with an id and a score in its metadata."""

QUESTION = "Is the Eiffel Tower in the capital of France?"
ANSWER = "Paris is the capital of France [1]."
USAGE = {"input_tokens": 42, "output_tokens": 9, "total_tokens": 51}
MODEL = "fake-chat-1"

PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from the context only.\n\nContext:\n{context}"),
        ("human", "{question}"),
    ]
)

_WORD = re.compile(r"\w+")


class CorpusRetriever(BaseRetriever):
    """Ranks the corpus by words shared with the query; raises on the query `boom`."""

    documents: Sequence[Document] = CORPUS
    k: int = 3

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        if query == "boom":
            raise LookupError("the index is offline")
        words = set(_WORD.findall(query.lower()))
        scored = [
            (len(words & set(_WORD.findall(doc.page_content.lower()))), -index, doc)
            for index, doc in enumerate(self.documents)
        ]
        scored.sort(key=lambda item: (item[0], item[1]), reverse=True)
        return [doc for overlap, _, doc in scored[: self.k] if overlap]


class NamedFakeChatModel(GenericFakeChatModel):
    """LangChain's generic fake chat model with a model name, as real chat models have."""

    model_name: str = MODEL


def fake_model(answer: str = ANSWER, usage: dict[str, int] | None = None) -> BaseChatModel:
    """A fake chat model that always answers `answer` (with token usage when invoked)."""
    message = AIMessage(content=answer, usage_metadata=usage or USAGE)  # type: ignore[arg-type]
    return NamedFakeChatModel(messages=itertools.repeat(message))


def format_docs(documents: list[Document]) -> str:
    """Number the documents for the prompt, as RAG tutorials do."""
    return "\n".join(f"[{i}] {doc.page_content}" for i, doc in enumerate(documents, 1))


def rag_chain(model: BaseChatModel | None = None, retriever: Any = None) -> Runnable[Any, str]:
    """`{"context": retriever | format_docs, "question": passthrough} | prompt | model | parser`."""
    retriever = retriever if retriever is not None else CorpusRetriever()
    return (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | (model if model is not None else fake_model())
        | StrOutputParser()
    )
