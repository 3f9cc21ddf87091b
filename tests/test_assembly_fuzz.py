"""Property: any attribute garbage on any span tree assembles without an exception escaping."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundwire.assembly import SpanRecord, TurnAssembler, turns_from_spans

KEYS = [
    "openinference.span.kind",
    "input.value",
    "input.mime_type",
    "output.value",
    "output.mime_type",
    "retrieval.documents.0.document.content",
    "retrieval.documents.0.document.id",
    "retrieval.documents.0.document.score",
    "retrieval.documents.0.document.metadata",
    "retrieval.documents.1.document.content",
    "retrieval.documents.x.document.content",
    "reranker.input_documents.0.document.id",
    "reranker.output_documents.0.document.content",
    "reranker.output_documents.0.document.score",
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.retrieval.query.text",
    "gen_ai.retrieval.documents",
    "llm.model_name",
    "groundwire.framework",
]
KINDS = ["RETRIEVER", "RERANKER", "LLM", "CHAIN", "AGENT", "EMBEDDING", "retrieval", "chat"]
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
VALUES = (
    st.sampled_from(KINDS)
    | st.sampled_from(["application/json", "text/plain", "{", "[", '"'])
    | st.text(max_size=12)
    | st.integers()
    | st.floats(allow_nan=True)
    | st.booleans()
    | st.tuples(st.text(max_size=4), st.text(max_size=4))
    | JSONISH.map(lambda v: json.dumps(v))
    | JSONISH
)


BASE: list[dict[str, Any]] = [
    {"openinference.span.kind": "CHAIN", "input.value": "q", "output.value": "a"},
    {"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.content": "d"},
    {"openinference.span.kind": "RERANKER", "reranker.output_documents.0.document.content": "d"},
    {"openinference.span.kind": "LLM", "output.value": "a"},
]
"""A valid turn (root, retriever, reranker, model call) that garbage is laid over."""


@st.composite
def traces(draw: Any) -> list[SpanRecord]:
    """A valid RAG turn plus up to 5 random spans, every span's attributes partly overwritten."""
    size = draw(st.integers(len(BASE), len(BASE) + 5))
    records: list[SpanRecord] = []
    for index in range(size):
        if index == 0:
            parent = None
        elif index < len(BASE):
            parent = 0
        else:
            parent = draw(st.none() | st.integers(0, index - 1))
        attributes = dict(BASE[index]) if index < len(BASE) else {}
        attributes.update(draw(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=4)))
        start = index * 10 if index < len(BASE) else draw(st.integers(0, 100))
        end = draw(st.none() | st.integers(start, 200)) if index else 1_000
        records.append(
            SpanRecord(
                trace_id="ab" * 16,
                span_id=format(index + 1, "016x"),
                parent_span_id=format(parent + 1, "016x") if parent is not None else None,
                name=f"s{index}",
                start_time_ns=start,
                end_time_ns=end,
                attributes=attributes,
            )
        )
    return records


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_garbage_attributes_never_break_assembly(records: list[SpanRecord]) -> None:
    """No exception reaches the per-trace safety net; live (fed in end order) matches offline."""
    logger = logging.getLogger("groundwire.assembly")
    failures: list[logging.LogRecord] = []

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.exc_info and "could not be assembled" in record.getMessage():
                failures.append(record)

    handler = Catch(level=logging.DEBUG)
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        offline = turns_from_spans(records)
        assembler = TurnAssembler()
        in_end_order = sorted(
            records,
            key=lambda r: (r.is_local_root, r.end_time_ns or r.start_time_ns),
        )
        for record in in_end_order:
            assembler.turn_for(record)
        live = [turn for record in in_end_order for turn in assembler.add(record)]
        live += assembler.flush()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert failures == []
    assert sorted(t.span_id or "" for t in live) == sorted(t.span_id or "" for t in offline)


@pytest.mark.parametrize("depth", [3_000])
def test_very_deep_trace_does_not_exhaust_the_stack(depth: int) -> None:
    """A chain of thousands of nested spans (a corrupt or adversarial file) still assembles."""
    records = [
        SpanRecord(
            "cd" * 16,
            format(i + 1, "016x"),
            format(i, "016x") if i else None,
            "s",
            i,
            10_000 - i,
            {"input.value": "q", "output.value": "a"},
        )
        for i in range(depth)
    ]
    records.append(
        SpanRecord(
            "cd" * 16,
            format(depth + 1, "016x"),
            format(depth, "016x"),
            "r",
            depth,
            depth + 1,
            {"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.content": "d"},
        )
    )
    (turn,) = turns_from_spans(records)
    assert turn.span_id == format(1, "016x")
    assert turn.context_texts == ["d"]
