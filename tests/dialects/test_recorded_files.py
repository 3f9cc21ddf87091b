"""The recorded trace files under tests/data/traces read offline into the apps' real turns, and
still say what a fresh recording says (so `python -m tests.dialects.record` can regenerate them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwire.assembly import SpanRecord, explain_traces
from groundwire.offline import TurnCounts, iter_turns
from groundwire.offline.readers import Problems, read_file
from tests.agents import genai_service as service
from tests.dialects import record as recorders
from tests.dialects._apps import ANSWERS, QUESTIONS, TRACES, Essence, essence, expected_langchain
from tests.test_assembly_langchain import KeywordRetriever


def read(path: Path) -> list[SpanRecord]:
    """Every span of a trace file, through the offline readers (no bad record allowed)."""
    problems = Problems(strict=True)
    return [span for batch in read_file(path, problems) for span in batch.spans]


def genai_expected(question: str) -> Essence:
    """The GenAI app's turn: contexts are its system messages (the retrieved texts)."""
    from tests.dialects.test_genai import ANSWER

    return question, [d.page_content for d in KeywordRetriever().invoke(question)], ANSWER


LANGCHAIN = [expected_langchain(q, a) for q, a in zip(QUESTIONS, ANSWERS, strict=True)]
EXPECTED: dict[str, list[Essence]] = {
    "openllmetry_langchain.jsonl": LANGCHAIN,
    "openinference_langchain.jsonl": LANGCHAIN,
    "mlflow_langchain.jsonl": LANGCHAIN,
    "genai_openai_v2.jsonl": [genai_expected(q) for q in QUESTIONS],
    "genai_events.jsonl": [genai_expected(q) for q in QUESTIONS],
    "openllmetry_langchain_no_content.jsonl": [],
    # the agent searches each question as asked over the same corpus: the chain's turns
    "openinference_langgraph_agent.jsonl": LANGCHAIN,
    "openllmetry_langgraph_agent.jsonl": LANGCHAIN,
    "genai_service.jsonl": [
        (service.QUESTION, list(service.PASSAGES), service.ANSWER),
        ("When was it completed?", list(service.PASSAGES), service.ANSWER),
    ],
}


def test_every_recorder_has_an_expectation() -> None:
    """Each recorded file is checked below."""
    assert set(EXPECTED) == set(recorders.RECORDERS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_committed_file_gives_the_apps_turns(name: str) -> None:
    """Read offline (spans and log records), each committed file gives the turns its app made."""
    turns = iter_turns([TRACES / name], Problems(strict=True), TurnCounts())
    assert essence(list(turns)) == EXPECTED[name]


def _shape(spans: list[SpanRecord]) -> list[tuple[str | None, list[str]]]:
    """What a recording must keep: the turns' origins and every trace's dialects."""
    return [(report.reason, report.dialects) for report in explain_traces(spans)]


@pytest.mark.parametrize(
    "name",
    [
        "openllmetry_langchain.jsonl",
        "openllmetry_langchain_no_content.jsonl",
        "genai_openai_v2.jsonl",
        "genai_events.jsonl",
        "openinference_langgraph_agent.jsonl",
        "openllmetry_langgraph_agent.jsonl",
        "genai_service.jsonl",
        pytest.param("mlflow_langchain.jsonl", marks=pytest.mark.slow),
    ],
)
def test_fresh_recording_matches_the_committed_file(name: str, tmp_path: Path) -> None:
    """Recording again gives the same turns, dialects and diagnoses as the committed file."""
    path = recorders.RECORDERS[name](tmp_path / name)
    fresh, committed = read(path), read(TRACES / name)
    fresh_turns = iter_turns([path], Problems(strict=True), TurnCounts())
    committed_turns = iter_turns([TRACES / name], Problems(strict=True), TurnCounts())
    assert essence(list(fresh_turns)) == essence(list(committed_turns))
    assert _shape(fresh) == _shape(committed)
    assert sorted({s.name for s in fresh}) == sorted({s.name for s in committed})
