"""`groundwire demo` and its parts: BM25 retriever, offline stand-in model, real-model path."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from groundwire.demo import QUESTIONS, load_chunks, run_demo
from groundwire.demo._trace_file import read_online_results
from groundwire.demo.app import (
    DEMO_SEED,
    STAND_IN_MODEL_NAME,
    CorpusRetriever,
    OfflineStandInChatModel,
    OpenAICompatibleChatModel,
    build_chain,
    choose_model,
    format_docs,
)
from groundwire.testing import OpenAIServer, Reply, chat_completion

ROOT = Path(__file__).resolve().parents[1]
GROUNDWIRE = Path(sys.executable).with_name("groundwire")
_CLEARED = ("OPENAI_", "GROUNDWIRE_", "OTEL_")
INVENTED = "a fine of one dollar a day is charged for every late item"
"""The quote the stand-in invents for question 2 with the demo's seed."""


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any model, judge or OTLP settings of the developer's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_CLEARED)}
    env.update(extra)
    return env


def run_cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`groundwire ARGS` in a subprocess, with a generous deadline for this shared machine."""
    return subprocess.run(
        [str(GROUNDWIRE), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def otlp_spans(path: Path) -> Iterator[dict[str, Any]]:
    """Every span of an OTLP/JSON-lines file, with `attrs` and `evals` (name -> score value)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        for resource_spans in json.loads(line).get("resourceSpans", ()):
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    span["attrs"] = _values(span.get("attributes", ()))
                    span["evals"] = {}
                    for event in span.get("events", ()):
                        if event["name"] == "gen_ai.evaluation.result":
                            values = _values(event.get("attributes", ()))
                            name = values["gen_ai.evaluation.name"]
                            span["evals"][name] = values.get("gen_ai.evaluation.score.value")
                    yield span


def _values(pairs: Any) -> dict[str, Any]:
    """OTLP/JSON `KeyValue` pairs as a dict of plain values."""
    return {p["key"]: next(iter(p["value"].values()), None) for p in pairs}


# --- the demo, end to end ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`groundwire demo` run once, offline, with no key and no server."""
    out = tmp_path_factory.mktemp("demo") / "out"
    result = run_cli("demo", "--out", str(out), env=clean_env(), cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result, out


def test_demo_writes_turn_spans_with_online_scores(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The trace file holds six LangChain turns scored online: inline on the root, rest after."""
    _, out = demo_run
    spans = list(otlp_spans(out / "traces.jsonl"))
    roots = [s for s in spans if not s.get("parentSpanId")]
    assert len(roots) == 6
    assert all(r["attrs"]["groundwire.framework"] == "langchain" for r in roots)
    assert all(set(r["evals"]) == {"quoted_spans"} for r in roots)
    llm = [s for s in spans if s["attrs"].get("openinference.span.kind") == "LLM"]
    assert {s["attrs"]["gen_ai.request.model"] for s in llm} == {STAND_IN_MODEL_NAME}
    retrievals = [s for s in spans if s["attrs"].get("openinference.span.kind") == "RETRIEVER"]
    assert len(retrievals) == 6
    assert all("retrieval.documents.0.document.content" in s["attrs"] for s in retrievals)
    carriers = [s for s in spans if s["attrs"].get("openinference.span.kind") == "EVALUATOR"]
    assert {r["spanId"] for r in roots} == {c["parentSpanId"] for c in carriers}
    for carrier in carriers:
        assert "quote_verification" in carrier["evals"]
        judged = {name: carrier["evals"].get(name) for name in ("groundedness", "citation_support")}
        assert judged == {"groundedness": None, "citation_support": None}  # skipped: no judge


def test_demo_rescored_the_trace_file_into_a_report_and_scores(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """scores.jsonl has a record per question, flags the invented quote; the report shows it."""
    _, out = demo_run
    records = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert [r["query"] for r in records] == list(QUESTIONS[:6])
    trace_ids = {s["traceId"] for s in otlp_spans(out / "traces.jsonl")}
    assert {r["trace_id"] for r in records} <= trace_ids
    invented = records[1]
    assert invented["scores"]["quote_verification"] == 0.0
    assert invented["scores"]["quoted_spans"] == 0.0
    assert all(r["scores"]["groundedness"] is None for r in records)
    assert all(r["details"]["groundedness"]["label"] == "skipped" for r in records)
    slipped = records[5]  # a dropped word ("four [hundred] volumes"): a changed number
    assert slipped["scores"]["quoted_spans"] == 0.0
    assert slipped["scores"]["quote_verification"] == 0.0
    (row,) = slipped["details"]["quote_verification"]["details"]["quotes"]
    assert row["low_confidence_reason"] == "number changed: 'four hundred' -> 'four'"
    report = (out / "report.html").read_text(encoding="utf-8")
    assert report.startswith("<!DOCTYPE html>") or report.lstrip().lower().startswith("<!doctype")
    assert INVENTED in report
    quoting = [q for i, q in enumerate(QUESTIONS[:6]) if i != 4]  # 5 paraphrases: nothing to score
    assert all(question in report for question in quoting)


def test_demo_summary_shows_real_scores_and_the_files(
    demo_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The summary names the stand-in, flags the invented quote and says where the files are."""
    result, out = demo_run
    text = " ".join(result.stdout.split())
    assert "offline stand-in" in text
    assert "groundedness and citation_support were skipped" in text
    assert f"not in the sources: \u201c{INVENTED}\u201d" in text
    assert (
        "6. misquoted (quote_verification refuses it): number changed: 'four hundred' -> 'four'"
        in text
    )
    assert re.search(r"mean\s+│\s+0\.40\s+│\s+0\.60\s+│", result.stdout)
    assert "6 of 6 turns scored while the app ran" in text
    assert "agrees on 12 of 12 deterministic scores" in text
    for name in ("traces.jsonl", "report.html", "scores.jsonl"):
        assert name in text and (out / name).is_file()


def _without(path: Path, target: Path, signal: str) -> Path:
    """A copy of an OTLP/JSON-lines file without its span events ("events") or its log
    records ("logs")."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if signal == "logs" and "resourceLogs" in data:
            continue
        if signal == "events":
            for resource_spans in data.get("resourceSpans", ()):
                for scope_spans in resource_spans["scopeSpans"]:
                    for span in scope_spans["spans"]:
                        span.pop("events", None)
        lines.append(json.dumps(data))
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def test_demo_summary_reads_results_from_span_events_and_log_records(
    demo_run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    """Online results are read from log records as well as span events, each counted once: a
    file holding only one of the two gives the same scores."""
    result, out = demo_run
    text = " ".join(result.stdout.split())
    assert "12 evaluation results in the trace file (12 as span events, 12 as log records)" in text
    both = read_online_results(out / "traces.jsonl")
    logs_only = read_online_results(_without(out / "traces.jsonl", tmp_path / "l.jsonl", "events"))
    events_only = read_online_results(_without(out / "traces.jsonl", tmp_path / "e.jsonl", "logs"))
    assert (logs_only.from_events, logs_only.from_logs) == (0, 12)
    assert (events_only.from_events, events_only.from_logs) == (12, 0)
    assert both.results == logs_only.results == events_only.results == 12
    assert both.scores == logs_only.scores == events_only.scores


def _fake_openai(request: Any) -> Reply:
    """Answers the demo app with a verbatim quote of source [1]; judges by their schema's fields."""
    tools = request.get("tools")
    if not tools:
        source = re.search(r"^\[1\] (.+)$", request["messages"][0]["content"], re.MULTILINE)
        quote = " ".join(source.group(1).split()[:8]) if source else "nothing"
        body = chat_completion(f"The handbook says \u201c{quote}\u201d [1].", model="served-model")
        return Reply(json=body)
    function = tools[0]["function"]
    fields = set(function["parameters"].get("properties", {}))
    if "rating" in fields:
        data: dict[str, Any] = {"rating": 2}
    elif "claims" in fields:
        data = {"claims": ["The handbook says something [1]."]}
    else:
        data = {"verdict": "not_supported", "supporting_phrase": "", "missing": "x", "basis": "b."}
    return Reply.tool_call(function["name"], data)


def test_demo_uses_a_real_model_and_judges_when_a_server_is_configured(tmp_path: Path) -> None:
    """GROUNDWIRE_JUDGE_BASE_URL makes the app ask that server, and the judges score for real."""
    with OpenAIServer() as server:
        server.set_default(_fake_openai)
        env = clean_env(GROUNDWIRE_JUDGE_BASE_URL=server.base_url, GROUNDWIRE_JUDGE_MODEL="m-1")
        result = run_cli("demo", "--out", str(tmp_path), "-n", "2", env=env, cwd=tmp_path)
        requests, base_url = server.requests, server.base_url
    assert result.returncode == 0, result.stderr
    app_calls = [r for r in requests if not r.json.get("tools")]
    assert len(app_calls) == 2
    assert all(r.json["model"] == "m-1" and "Tidewater" in r.text for r in app_calls)
    text = " ".join(result.stdout.split())
    assert f"m-1 at {base_url} (a real model)" in text
    assert "offline stand-in" not in text and "skipped" not in text
    records = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert [r["scores"]["groundedness"] for r in records] == [1.0, 1.0]
    assert [r["scores"]["quoted_spans"] for r in records] == [1.0, 1.0]
    llm = [s for s in otlp_spans(tmp_path / "traces.jsonl") if s["name"].startswith("chat")]
    assert {s["attrs"]["gen_ai.response.model"] for s in llm} == {"served-model"}


def test_demo_reports_a_failing_model_clearly(tmp_path: Path) -> None:
    """A model server refusing the key ends the demo with exit 1 and a message, not a traceback."""
    with OpenAIServer() as server:
        server.set_default(Reply.error(401, "invalid api key"))
        env = clean_env(OPENAI_API_KEY="sk-wrong", OPENAI_BASE_URL=server.base_url)
        result = run_cli("demo", "--out", str(tmp_path), env=env, cwd=tmp_path)
    assert result.returncode == 1
    message = " ".join(result.stderr.split())
    assert "groundwire demo: the app's model (gpt-4o-mini at http://127.0.0.1:" in message
    assert "failed on question 1 (AuthenticationError)" in message
    assert "Traceback" not in result.stderr
    assert (tmp_path / "traces.jsonl").is_file()  # online evaluation was shut down and flushed


def test_demo_reports_an_unreachable_model_in_one_line(tmp_path: Path) -> None:
    """A model server that is not there: exit 1 and one line saying so (the judges' client logs
    no retry noise), besides the progress lines."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    env = clean_env(GROUNDWIRE_JUDGE_BASE_URL=url, GROUNDWIRE_JUDGE_MODEL="m-1")
    result = run_cli("demo", "--out", str(tmp_path), "-n", "1", env=env, cwd=tmp_path)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if not line.startswith("question ")]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("groundwire demo: the app's model (m-1 at ")
    assert "failed on question 1 (APIConnectionError)" in lines[0]


def test_demo_says_when_hidden_text_leaves_nothing_to_rescore(tmp_path: Path) -> None:
    """With inputs hidden, turns are still scored online; the summary explains the empty table."""
    env = clean_env(GROUNDWIRE_HIDE_INPUTS="true")
    result = run_cli("demo", "--out", str(tmp_path), "-n", "2", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "the trace file holds no turn that can be re-scored" in text
    assert "2 of 2 turns scored while the app ran" in text
    spans = list(otlp_spans(tmp_path / "traces.jsonl"))
    assert not any("input.value" in s["attrs"] for s in spans)
    assert sum("quoted_spans" in s["evals"] for s in spans) == 2


def test_demo_rejects_a_question_count_it_cannot_ask(tmp_path: Path) -> None:
    """--questions beyond the bundled list fails naming the option; run_demo names the bound."""
    result = run_cli("demo", "--out", str(tmp_path), "-n", "99", env=clean_env(), cwd=tmp_path)
    assert result.returncode == 2
    assert "--questions" in result.stderr and "99" in result.stderr
    with pytest.raises(ValueError, match=f"between 1 and {len(QUESTIONS)}, got 0"):
        run_demo(tmp_path, 0)
    assert not (tmp_path / "traces.jsonl").exists()


def test_demo_package_does_not_import_langchain_or_openai() -> None:
    """`import groundwire.demo` (and the CLI) stay light: frameworks load only when the app runs."""
    code = (
        "import sys, groundwire, groundwire.demo, groundwire.cli; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langchain_core', 'openai'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- the parts -----------------------------------------------------------------------------------


def test_retriever_ranks_paragraphs_by_bm25_and_skips_unrelated_ones() -> None:
    """The top paragraphs for a question come first with their BM25 score; no shared word, none."""
    retriever = CorpusRetriever(k=3)
    documents = retriever.invoke("Does the library charge late fees?")
    assert documents[0].id == "borrowing#3"
    scores = [doc.metadata["score"] for doc in documents]
    assert scores == sorted(scores, reverse=True) and len(documents) == 3
    assert retriever.invoke("zebra quantum") == []
    with pytest.raises(ValueError, match=r"CorpusRetriever\.k must be a positive integer, got 0"):
        CorpusRetriever(k=0)


def _prompt(question: str) -> list[Any]:
    """The demo prompt's messages for `question`, sources from the BM25 retriever."""
    documents = CorpusRetriever().invoke(question)
    return [SystemMessage(f"Sources:\n{format_docs(documents)}"), HumanMessage(question)]


def test_stand_in_is_deterministic_and_quotes_in_each_style() -> None:
    """Same prompt, same answer; with the demo's seed the first six questions get all six styles."""
    model = OfflineStandInChatModel(seed=DEMO_SEED)
    styles = []
    for question in QUESTIONS[:6]:
        first, again = model.invoke(_prompt(question)), model.invoke(_prompt(question))
        assert first.content == again.content
        styles.append(first.response_metadata["quote_style"])
    assert sorted(styles) == sorted(
        ["ellipsis", "invented", "exact", "respaced", "paraphrase", "slip"]
    )
    other = OfflineStandInChatModel(seed=DEMO_SEED + 1)
    answers = [m.invoke(_prompt(q)).content for q in QUESTIONS for m in (model, other)]
    assert answers[0::2] != answers[1::2]


def test_stand_in_quotes_exactly_or_invents_what_no_source_says() -> None:
    """An exact quote is in the cited passage verbatim; an invented one is in no paragraph."""
    model = OfflineStandInChatModel(seed=DEMO_SEED)
    corpus = " ".join(" ".join(chunk.text.split()) for chunk in load_chunks())
    exact = model.invoke(_prompt(QUESTIONS[2]))
    assert exact.response_metadata["quote_style"] == "exact"
    quote = re.search("\u201c(.+)\u201d", str(exact.content))
    assert quote is not None and quote.group(1) in corpus
    assert str(exact.content).endswith("[1].")
    invented = model.invoke(_prompt(QUESTIONS[1]))
    assert invented.response_metadata["quote_style"] == "invented"
    assert INVENTED in str(invented.content) and INVENTED not in corpus.lower()


def test_stand_in_without_sources_says_so_and_without_a_question_fails() -> None:
    """No numbered passages: it says it found nothing; no human message: a clear ValueError."""
    model = OfflineStandInChatModel()
    reply = model.invoke([SystemMessage("Sources:\n"), HumanMessage("Anything?")])
    assert "could not find" in str(reply.content) and "\u201c" not in str(reply.content)
    with pytest.raises(ValueError, match="no human message"):
        model.invoke([SystemMessage("[1] text")])


def test_choose_model_follows_the_environment() -> None:
    """No key or server: the stand-in; a judge base URL: the OpenAI-compatible model on it."""
    model, label = choose_model(env={})
    assert isinstance(model, OfflineStandInChatModel) and "offline stand-in" in label
    env = {"GROUNDWIRE_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "GROUNDWIRE_JUDGE_MODEL": "m"}
    model, label = choose_model(env=env)
    assert isinstance(model, OpenAICompatibleChatModel)
    assert (model.model_name, model.base_url) == ("m", "http://127.0.0.1:9/v1")
    model, _ = choose_model(env=env, stand_in=True)
    assert isinstance(model, OfflineStandInChatModel)
    model, _ = choose_model(env={"OPENAI_API_KEY": "sk-test"})
    assert isinstance(model, OpenAICompatibleChatModel) and model.base_url is None


def test_openai_compatible_model_speaks_chat_completions() -> None:
    """The real-model path sends system and user messages at temperature 0 and reports usage."""
    with OpenAIServer() as server:
        server.set_default(
            Reply(json=chat_completion("It is \u201cfree\u201d [1].", usage=(30, 6)))
        )
        model = OpenAICompatibleChatModel(model_name="m-2", base_url=server.base_url)
        answer = build_chain(model).invoke("Do I need a password for the wireless internet?")
        message = model.invoke([HumanMessage("hi")])
        first = server.requests[0]
    assert answer == "It is \u201cfree\u201d [1]."
    assert first.json["model"] == "m-2" and first.json["temperature"] == 0.0
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert "[1] Both branches offer free wireless internet" in first.messages[0]["content"]
    assert message.usage_metadata is not None
    assert (message.usage_metadata["input_tokens"], message.usage_metadata["output_tokens"]) == (
        30,
        6,
    )
