"""Provenance on every result: judge model, prompt hash and evaluator version, on the result
events (span and log record) and on each row of a scores file, under `groundwire.*` names."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import groundwire
from groundwire import RagTurn, Score, evaluate, get_evaluator, semconv
from groundwire.emit import Emitter, provenance, registered_version
from groundwire.judges import CITATION_PROMPT_HASH, GROUNDEDNESS_PROMPT_HASH, prompt_hash
from groundwire.offline import rescore
from groundwire.testing import OpenAIServer, structured
from tests.offline._cli_files import write_turns


@pytest.fixture(scope="module")
def judge() -> Iterator[OpenAIServer]:
    """A judge server rating every answer 2."""
    with OpenAIServer(default=structured({"rating": 2})) as server:
        yield server


def _groundedness(server: OpenAIServer) -> Score:
    """One groundedness score from the scripted judge."""
    evaluator = get_evaluator(
        "groundedness", model="judge-x", base_url=server.base_url, api_key="k", cache="off"
    )
    turn = RagTurn(query="q", answer="Paris.", contexts=["Paris is in France."])
    return evaluate(turn, [evaluator])["groundedness"]


def test_prompt_hash_is_stable_and_changes_with_the_text() -> None:
    """12 hex digits; the same texts give the same hash, any edit another."""
    assert re.fullmatch(r"[0-9a-f]{12}", GROUNDEDNESS_PROMPT_HASH)
    assert prompt_hash("a", "b") == prompt_hash("a", "b") != prompt_hash("a", "b ")
    assert prompt_hash("ab") != prompt_hash("a", "b")
    assert GROUNDEDNESS_PROMPT_HASH != CITATION_PROMPT_HASH


def test_result_events_carry_provenance(judge: OpenAIServer) -> None:
    """The span event and the log record of a judge's score name model, prompt and version."""
    score = _groundedness(judge)
    assert score.details[semconv.DETAIL_PROMPT_VERSION] == GROUNDEDNESS_PROMPT_HASH
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    emitter = Emitter(
        tracer_provider=tracer_provider,
        logger_provider=logger_provider,
        events="both",
        evaluators=[get_evaluator("quoted_spans"), get_evaluator("groundedness")],
    )
    emitter.emit_span(("1" * 32, "2" * 16), [score])
    expected = {
        semconv.GROUNDWIRE_JUDGE_MODEL: "judge-x",
        semconv.GROUNDWIRE_JUDGE_PROMPT_VERSION: GROUNDEDNESS_PROMPT_HASH,
        semconv.GROUNDWIRE_EVALUATOR_VERSION: groundwire.__version__,
    }
    (span,) = spans.get_finished_spans()
    (event,) = span.events
    (record,) = logs.get_finished_logs()
    for attributes in (dict(event.attributes or {}), dict(record.log_record.attributes or {})):
        assert {key: attributes.get(key) for key in expected} == expected


def test_scores_file_rows_carry_provenance(judge: OpenAIServer, tmp_path: Path) -> None:
    """Each row's details name what scored: judge model and prompt hash for the judge, the
    evaluator version for every evaluator."""
    traces = write_turns(["q1", "q2"], tmp_path / "t.jsonl")
    out = tmp_path / "scores.jsonl"
    options = {"model": "judge-x", "base_url": judge.base_url, "api_key": "k", "cache": "off"}
    rescore([traces], {"groundedness": options, "quoted_spans": {}}, out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2
    for row in rows:
        assert row["details"]["groundedness"]["provenance"] == {
            semconv.GROUNDWIRE_JUDGE_MODEL: "judge-x",
            semconv.GROUNDWIRE_JUDGE_PROMPT_VERSION: GROUNDEDNESS_PROMPT_HASH,
            semconv.GROUNDWIRE_EVALUATOR_VERSION: groundwire.__version__,
        }
        assert row["details"]["quoted_spans"]["provenance"] == {
            semconv.GROUNDWIRE_EVALUATOR_VERSION: groundwire.__version__
        }


def test_unknown_origin_has_no_version() -> None:
    """A name no entry point registers has no version; a score without a judge no judge keys."""
    assert registered_version("not-registered-anywhere") is None
    assert provenance(Score(name="x", value=1.0)) == {}
