"""`CorpusRetriever`: a LangChain `BaseRetriever` ranking the bundled corpus by BM25."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, PrivateAttr
from rank_bm25 import BM25Okapi

from groundwire.demo._corpus import load_chunks
from groundwire.demo._words import content_words

__all__ = ["CorpusRetriever", "corpus_documents"]

_tokens = content_words


def corpus_documents() -> list[Document]:
    """The bundled corpus's paragraphs as LangChain documents (id `<document>#<paragraph>`)."""
    return [
        Document(id=chunk.id, page_content=chunk.text, metadata=dict(chunk.metadata))
        for chunk in load_chunks()
    ]


class CorpusRetriever(BaseRetriever):
    """The `k` paragraphs with the highest BM25 score for the query (ties keep corpus order).

    Paragraphs sharing no word with the query are never returned, so an off-topic question gets
    no contexts rather than noise. Each document's metadata gets its BM25 `score`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    documents: Sequence[Document] = Field(default_factory=corpus_documents)
    k: int = 2
    _index: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any, /) -> None:
        """Check `k` and build the BM25 index once."""
        if isinstance(self.k, bool) or self.k < 1:
            raise ValueError(f"CorpusRetriever.k must be a positive integer, got {self.k!r}")
        if not self.documents:
            raise ValueError("CorpusRetriever.documents must not be empty")
        self._index = BM25Okapi([_tokens(doc.page_content) for doc in self.documents])

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        """The top `k` paragraphs for `query` that share a word with it."""
        words = set(_tokens(query))
        scores = self._index.get_scores(list(words))
        ranked = sorted(range(len(self.documents)), key=lambda i: (-scores[i], i))
        found: list[Document] = []
        for index in ranked[: self.k]:
            doc = self.documents[index]
            if not words & set(_tokens(doc.page_content)):
                continue
            metadata = {**doc.metadata, "score": round(float(scores[index]), 4)}
            found.append(Document(id=doc.id, page_content=doc.page_content, metadata=metadata))
        return found
