"""OpenLLMetry's LlamaIndex instrumentor (0.62): a real query engine gives its real turn."""

from __future__ import annotations

import pytest
from llama_index.core import VectorStoreIndex
from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor

from groundwire.assembly import explain_traces, turns_from_spans
from tests.dialects._apps import record
from tests.test_assembly_llamaindex import QUESTION, build_index, engine


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    """The app's index, built once (outside any recording)."""
    return build_index()


def test_query_engine_turn_is_the_response_and_its_source_nodes(index: VectorStoreIndex) -> None:
    """Query, the source nodes the synthesizer used (in order, with ids and scores), answer."""
    responses = []
    spans = record(
        [LlamaIndexInstrumentor()], lambda: responses.append(engine(index).query(QUESTION))
    )
    (response,) = responses
    (turn,) = turns_from_spans(spans)
    assert turn.query == QUESTION
    assert turn.answer == str(response)
    assert turn.context_texts == [n.node.get_content() for n in response.source_nodes]
    assert [c.id for c in turn.contexts] == [n.node.node_id for n in response.source_nodes]
    assert [c.score for c in turn.contexts] == pytest.approx(
        [n.score for n in response.source_nodes]
    )
    assert turn.attributes.get("groundwire.framework") == "llamaindex"
    (report,) = explain_traces(spans)
    (root,) = report.turns
    assert root.root_name == "RetrieverQueryEngine.workflow"
    assert root.query is not None and root.query.origin == "openllmetry: traceloop.entity.input"
    assert [(c.span_name, c.origin) for c in root.contexts] == [
        ("VectorIndexRetriever.task", "openllmetry: traceloop.entity.output")
    ]
