"""The `erag` evaluator on turns from a real LangChain RAG app, with a fake chat model generator."""

from __future__ import annotations

import math
import re

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import ParrotFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough

import groundwire
from groundwire import Context, RagTurn
from groundwire.evaluators import ERAG, LangChainGenerator, erag_score
from groundwire.testing import OpenAIServer, Reply

CORPUS = [
    "The Eiffel Tower was completed in 1889 for the World's Fair.",
    "Gustave Eiffel's company designed and built the tower in Paris.",
    "The tower is 330 metres tall and was the tallest structure until 1930.",
    "Paris is the capital of France and sits on the Seine.",
    "Big Ben is the nickname of the great bell of the clock at Westminster.",
    "The Elizabeth Tower in London was completed in 1859.",
]

QUESTIONS = {
    "When was the Eiffel Tower completed?": ["1889"],
    "Which company built the Eiffel Tower?": ["Gustave Eiffel's company"],
    "When was the Elizabeth Tower completed?": ["1859"],
}


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


class CorpusRetriever(BaseRetriever):
    """Ranks the corpus by word overlap with the query: a real LangChain retriever."""

    documents: list[Document]
    k: int = 3

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        wanted = _words(query)
        ranked = sorted(self.documents, key=lambda d: -len(wanted & _words(d.page_content)))
        return ranked[: self.k]


@pytest.fixture(scope="module")
def turns() -> list[RagTurn]:
    """Turns recorded from a LangChain RAG chain: retriever, prompt, chat model, parser."""
    retriever = CorpusRetriever(
        documents=[
            Document(page_content=text, metadata={"id": f"d{i}"}) for i, text in enumerate(CORPUS)
        ]
    )
    prompt = ChatPromptTemplate.from_messages(
        [("human", "Context:\n{context}\n\nQuestion: {question}")]
    )
    chain = (
        {
            "context": retriever | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | ParrotFakeChatModel()
        | StrOutputParser()
    )
    recorded = []
    for question, gold in QUESTIONS.items():
        documents = retriever.invoke(question)
        recorded.append(
            RagTurn(
                query=question,
                contexts=[
                    Context(text=d.page_content, id=d.metadata["id"], rank=i)
                    for i, d in enumerate(documents)
                ],
                answer=chain.invoke(question),
                expected=gold,
            )
        )
    return recorded


def _generator() -> LangChainGenerator:
    """The eRAG generator: a fake chat model that repeats the document it is given."""
    return LangChainGenerator(ParrotFakeChatModel(), prompt="Document: {context}")


def test_scores_langchain_turns_like_erag_score(turns: list[RagTurn]) -> None:
    """Per turn, ERAG's metrics equal erag_score on that turn's query, documents and answers."""
    metrics = ["P", "success", "map", "ndcg_cut_3", "recip_rank", "P_1"]
    evaluator = ERAG(_generator(), retrieval_metrics=metrics)
    for turn in turns:
        score = groundwire.evaluate(turn, [evaluator])["erag"]
        expected = erag_score(
            {turn.query: turn.context_texts},
            {turn.query: list(turn.expected or ())},
            _generator(),
            "contains",
            metrics,
        )["per_input"][turn.query]
        assert score.ok
        assert score.details["metrics"] == expected
        assert score.value == expected["P"]


def test_known_values_for_one_turn(turns: list[RagTurn]) -> None:
    """The 1889 turn: only the first retrieved document holds the answer."""
    turn = turns[0]
    assert turn.contexts[0].text.startswith("The Eiffel Tower was completed in 1889")
    score = groundwire.evaluate(turn, [ERAG(_generator(), retrieval_metrics=["P", "success"])])[
        "erag"
    ]
    assert score.details["labels"] == [1.0, 0.0, 0.0]
    assert score.value == pytest.approx(1 / 3)
    assert score.details["metrics"]["success"] == 1.0
    assert score.details["primary"] == "P"
    assert score.explanation is not None and "1 of 3 documents" in score.explanation
    assert type(score).from_json(score.to_json()) == score  # details are plain JSON


def test_continuous_metric_and_explicit_primary(turns: list[RagTurn]) -> None:
    """token_f1 gives continuous labels; `primary` picks the score's value."""
    evaluator = ERAG(
        _generator(), metric="token_f1", retrieval_metrics=["P", "success_2"], primary="success_2"
    )
    score = groundwire.evaluate(turns[1], [evaluator])["erag"]
    labels = score.details["labels"]
    assert any(0 < label < 1 for label in labels)
    assert score.value == pytest.approx(max(labels[:2]))


def test_turn_without_expected_or_contexts_is_not_applicable() -> None:
    """No gold answers -> `no_expected`; no documents -> `no_contexts`; neither is an error."""
    evaluator = ERAG(_generator())
    no_gold = groundwire.evaluate(RagTurn(query="q", contexts=["d"], answer="a"), [evaluator])
    assert no_gold["erag"].value is None and no_gold["erag"].label == "no_expected"
    no_docs = RagTurn(query="q", contexts=[], answer="a", expected=["x"])
    assert groundwire.evaluate(no_docs, [evaluator])["erag"].label == "no_contexts"


def test_registry_builds_it_by_name(turns: list[RagTurn]) -> None:
    """`get_evaluator("erag", ...)` builds ERAG; a LangChain chat model is wrapped automatically."""
    evaluator = groundwire.get_evaluator(
        "erag", generator=ParrotFakeChatModel(), retrieval_metrics=["success"]
    )
    assert isinstance(evaluator, ERAG)
    scores = groundwire.evaluate_many(turns, {"erag": {"generator": ParrotFakeChatModel()}})
    assert all(s["erag"].ok for s in scores)


def test_binary_only_metric_with_continuous_labels_is_an_error_score(turns: list[RagTurn]) -> None:
    """`map` with token_f1 labels fails the turn with a clear error, never the caller."""
    evaluator = ERAG(_generator(), metric="token_f1", retrieval_metrics=["map"])
    score = groundwire.evaluate(turns[1], [evaluator])["erag"]
    assert score.value is not None and math.isnan(score.value)
    assert score.error is not None and "only P and success" in score.error


def test_bad_options_fail_at_construction() -> None:
    """Missing generator, unknown metric names and a stray primary are named at once."""
    with pytest.raises(ValueError, match="needs a generator"):
        ERAG()
    with pytest.raises(ValueError, match="unknown downstream metric 'bleu'"):
        ERAG(_generator(), metric="bleu")
    with pytest.raises(ValueError, match="unsupported measure P@5"):
        ERAG(_generator(), retrieval_metrics=["P@5"])
    with pytest.raises(ValueError, match="primary 'map' is not one of"):
        ERAG(_generator(), primary="map")
    with pytest.raises(ValueError, match="primary 'iprec_at_recall' gives several values"):
        ERAG(_generator(), retrieval_metrics=["iprec_at_recall"])


def test_openai_model_from_environment_counts_tokens(
    turns: list[RagTurn], openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`model=` builds an OpenAI generator from OPENAI_*; the score sums the calls' tokens."""
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    openai_server.set_default(Reply.chat("It was 1889.", usage=(11, 3)))
    score = groundwire.evaluate(turns[0], {"erag": {"model": "tiny"}})["erag"]
    assert score.details["labels"] == [1.0, 1.0, 1.0]
    assert score.usage == {"input": 33, "output": 9}
    assert openai_server.request_count == 3


def test_reference_style_callable_and_llamaindex_llm_as_generators(turns: list[RagTurn]) -> None:
    """A plain `text_generator` callable and a LlamaIndex MockLLM both work as ERAG generators."""
    from llama_index.core.llms import MockLLM

    def echo(inputs: dict[str, list[str]]) -> dict[str, str]:
        return {query: documents[0] for query, documents in inputs.items()}

    by_callable = groundwire.evaluate(turns[0], [ERAG(echo)])["erag"]
    by_llamaindex = groundwire.evaluate(turns[0], [ERAG(MockLLM())])["erag"]
    assert by_callable.details["labels"] == [1.0, 0.0, 0.0]
    assert by_llamaindex.details["labels"] == [1.0, 0.0, 0.0]  # MockLLM echoes the prompt
