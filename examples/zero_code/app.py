"""The app, unchanged: a LangChain RAG chain with no scoring code, answering three questions.

Nothing here configures OpenTelemetry or groundwire: `opentelemetry-instrument` (or the
Kubernetes operator's injected auto-instrumentation) does both from the environment. The
retriever and the chat model are groundwire's offline demo stand-ins (no network, no key); a real
app would use its own. See run_locally.py and README.md.
"""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from groundwire.demo.app import CorpusRetriever, OfflineStandInChatModel

QUESTIONS = (
    "Does the library charge late fees?",
    "For how long may books be borrowed?",
    "What was the library in 1887?",
)
PROMPT = ChatPromptTemplate.from_messages(
    [
        ("system", "Answer from these sources only, quoting them.\n\nSources:\n{context}"),
        ("human", "{question}"),
    ]
)


def format_docs(documents: list[Document]) -> str:
    """Number the retrieved paragraphs for the prompt: `[1] text`."""
    return "\n".join(
        f"[{i}] {' '.join(d.page_content.split())}" for i, d in enumerate(documents, 1)
    )


def main() -> None:
    """Answer each question and print it with its answer."""
    chain = (
        {"context": CorpusRetriever(k=2) | format_docs, "question": RunnablePassthrough()}
        | PROMPT
        | OfflineStandInChatModel(seed=2)
        | StrOutputParser()
    )
    for question in QUESTIONS:
        print(f"Q: {question}\nA: {chain.invoke(question)}\n")


if __name__ == "__main__":
    main()
