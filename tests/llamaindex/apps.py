"""Small real LlamaIndex components the tests compose: a reranker, LLMs, a nested engine."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.llms import CustomLLM
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.workflow import StartEvent, StopEvent, Workflow, step

dispatcher = get_dispatcher(__name__)


class ReverseReranker(BaseNodePostprocessor):
    """Reverses the retrieved order, keeps `top_n` and rescores 1.0, 0.5, 0.33...; announces
    itself with LlamaIndex's rerank events like the real rerankers do."""

    top_n: int = 2

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """Reverse, keep `top_n`, rescore."""
        dispatcher.event(
            ReRankStartEvent(
                query=query_bundle, nodes=nodes, top_n=self.top_n, model_name="reverse-v1"
            )
        )
        kept = [
            NodeWithScore(node=item.node, score=1.0 / (rank + 1))
            for rank, item in enumerate(reversed(nodes[-self.top_n :]))
        ]
        dispatcher.event(ReRankEndEvent(nodes=kept))
        return kept


class FailingReranker(BaseNodePostprocessor):
    """A postprocessor that always raises."""

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        """Raise, always."""
        raise RuntimeError("reranker exploded")


class CountingLLM(CustomLLM):
    """A completion LLM that answers with a fixed text and reports token usage like OpenAI's."""

    answer: str = "Paris is the capital."
    fail_after: int | None = None
    """Raise after streaming this many tokens (None: never)."""

    @property
    def metadata(self) -> LLMMetadata:
        """A named model."""
        return LLMMetadata(model_name="counting-1")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The fixed answer with token counts."""
        return CompletionResponse(
            text=self.answer,
            additional_kwargs={"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
        )

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        """The fixed answer word by word (raising midway when `fail_after` is set)."""
        words = self.answer.split(" ")

        def gen() -> CompletionResponseGen:
            """Yield the answer's words as completion chunks."""
            text = ""
            for i, word in enumerate(words):
                if self.fail_after is not None and i >= self.fail_after:
                    raise ConnectionError("stream cut")
                delta = word if i == 0 else " " + word
                text += delta
                yield CompletionResponse(text=text, delta=delta)

        return gen()


class TwoQuestions(CustomQueryEngine):
    """Asks an inner query engine two questions and joins the answers (a nested run)."""

    inner: BaseQueryEngine
    questions: Sequence[str]

    def custom_query(self, query_str: str) -> str:
        """Both inner answers, one per line."""
        return "\n".join(str(self.inner.query(q)) for q in self.questions)


class LookupTwice(Workflow):
    """A workflow whose one step asks a query engine two questions (an agent-like run)."""

    def __init__(self, engine: BaseQueryEngine, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.engine = engine

    @step
    async def ask(self, ev: StartEvent) -> StopEvent:
        """Ask `question` and `question` again; fail when asked to."""
        if ev.get("fail"):
            raise ValueError("workflow step failed")
        first = await self.engine.aquery(ev.question)
        second = await self.engine.aquery(ev.question + " again")
        return StopEvent(result=f"{first}\n{second}")
