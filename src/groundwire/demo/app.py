"""The demo's RAG app: BM25 retriever -> numbered context -> prompt -> chat model -> text (LCEL).

```python
from groundwire.demo.app import build_chain, choose_model

model, label = choose_model()
print(build_chain(model).invoke("Does the library charge late fees?"))
```
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from pydantic import SecretStr

from groundwire.demo._openai_chat import OpenAICompatibleChatModel
from groundwire.demo._questions import QUESTIONS
from groundwire.demo._retriever import CorpusRetriever
from groundwire.demo._standin import (
    STAND_IN_MODEL_NAME,
    OfflineStandInChatModel,
    stand_in_answer,
)

__all__ = [
    "DEMO_SEED",
    "PROMPT",
    "QUESTIONS",
    "REAL_MODEL_VARIABLES",
    "STAND_IN_MODEL_NAME",
    "CorpusRetriever",
    "OfflineStandInChatModel",
    "OpenAICompatibleChatModel",
    "build_chain",
    "choose_model",
    "format_docs",
    "stand_in_answer",
]

DEMO_SEED: Final = 2
"""The stand-in's seed: with it, the first six questions get one answer of each quoting style."""

REAL_MODEL_VARIABLES: Final = ("OPENAI_API_KEY", "GROUNDWIRE_JUDGE_BASE_URL")
"""Either one set means: answer with a real model over the OpenAI-compatible API."""

PROMPT: Final = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You answer questions about the Tidewater Regional Library from the numbered sources "
            "below only. Quote the words of the source that supports your answer verbatim "
            "between \u201ccurly quotes\u201d and cite it as [n]. Keep the answer to one or two "
            "sentences. If the sources do not say, answer that you do not know.\n\n"
            "Sources:\n{context}",
        ),
        ("human", "{question}"),
    ]
)
"""Asks for verbatim quotes with [n] citations: what the quote and citation evaluators check."""


def format_docs(documents: list[Document]) -> str:
    """Number the documents for the prompt, one line each (`[1] text`)."""
    return "\n".join(
        f"[{i}] {' '.join(doc.page_content.split())}" for i, doc in enumerate(documents, 1)
    )


def build_chain(
    model: BaseChatModel, retriever: CorpusRetriever | None = None
) -> Runnable[Any, str]:
    """`{"context": retriever | format_docs, "question": passthrough} | prompt | model | parser`."""
    retriever = retriever if retriever is not None else CorpusRetriever()
    return (
        {
            "context": retriever | RunnableLambda(format_docs),
            "question": RunnablePassthrough(),
        }
        | PROMPT
        | model
        | StrOutputParser()
    )


def choose_model(
    *, stand_in: bool = False, env: Mapping[str, str] | None = None
) -> tuple[BaseChatModel, str]:
    """The demo's chat model and a label for it: a real one when configured, else the stand-in.

    A real model is used when `OPENAI_API_KEY` or `GROUNDWIRE_JUDGE_BASE_URL` is set (and
    `stand_in` is False); it is configured like the judges (`GROUNDWIRE_JUDGE_MODEL`, ...).
    """
    env = os.environ if env is None else env
    if not stand_in and any(env.get(name, "").strip() for name in REAL_MODEL_VARIABLES):
        from groundwire.judges import JudgeConfig

        config = JudgeConfig.from_env(env)
        if config is not None:
            model = OpenAICompatibleChatModel(
                model_name=config.model,
                base_url=config.base_url,
                api_key=SecretStr(config.effective_api_key),
                timeout_s=config.timeout_s,
            )
            where = config.base_url or "api.openai.com"
            return model, f"{config.model} at {where} (a real model)"
    return (
        OfflineStandInChatModel(seed=DEMO_SEED),
        "offline stand-in (not an LLM: quotes, and sometimes misquotes, its sources; "
        "set OPENAI_API_KEY or GROUNDWIRE_JUDGE_BASE_URL for a real model)",
    )
