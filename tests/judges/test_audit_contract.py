"""`audit_citation`'s contract: arguments checked, defaults, what a failure carries, the
phrase check on every verdict, the serialised form, and the cache key a stored verdict is
found under (stable, so a disk cache from an earlier run is still hit)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from groundwire.judges import (
    JudgeCallError,
    JudgeClient,
    MemoryCache,
    aaudit_citation,
    audit_citation,
    cache_key,
)
from groundwire.judges._prompts import AUDIT_PROMPT_VERSION
from groundwire.testing import OpenAIServer, structured
from tests.judges._helpers import fast_config

SPAN = "Paris is the capital of France. It lies on the Seine."
CLAIM = "Paris is the capital of France."


def _verdict(kind: str, phrase: str) -> dict[str, str]:
    """An audit reply body."""
    return {"verdict": kind, "supporting_phrase": phrase, "missing": "", "basis": "Because."}


def test_the_serialised_form_carries_usage_and_flags(openai_server: OpenAIServer) -> None:
    """to_dict gives usage as {"input", "output"} and the flags as a list, beside every field."""
    openai_server.set_default(structured(_verdict("fully_supported", "capital of France")))
    result = audit_citation(CLAIM, SPAN, judge=fast_config(openai_server))
    data = result.to_dict()
    assert set(data) == {
        "verdict",
        "supporting_phrase",
        "missing",
        "basis",
        "judge_verdict",
        "phrase_in_span",
        "flags",
        "usage",
        "passes",
    }
    assert data["usage"] == {"input": 10, "output": 5} and data["flags"] == []
    assert data["supporting_phrase"] == "capital of France" and data["passes"] == 1


@pytest.mark.parametrize(
    ("kind", "phrase", "flagged"),
    [
        ("not_supported", "", False),
        ("not_supported", "an invented phrase", True),
        ("partially_supported", "an invented phrase", True),
        ("partially_supported", "capital of France", False),
    ],
)
def test_the_phrase_check_applies_to_every_verdict(
    openai_server: OpenAIServer, kind: str, phrase: str, flagged: bool
) -> None:
    """An invented phrase is flagged whatever the verdict; 'not supported' with none is not."""
    openai_server.set_default(structured(_verdict(kind, phrase)))
    result = audit_citation(CLAIM, SPAN, judge=fast_config(openai_server))
    assert result.verdict == kind and result.supporting_phrase == phrase
    assert result.flags == (("phrase_not_in_span",) if flagged else ())


@pytest.mark.parametrize("asynchronous", [False, True])
def test_one_pass_and_three_attempts_by_default(
    openai_server: OpenAIServer, asynchronous: bool
) -> None:
    """Without options: one pass, asked up to three times while the reply is invalid; the
    failure carries the tokens every attempt spent."""
    openai_server.set_default(structured(_verdict("mostly_supported", "x")))
    judge = fast_config(openai_server)

    def audit() -> object:
        """The form under test."""
        if asynchronous:
            return asyncio.run(aaudit_citation(CLAIM, SPAN, judge=judge))
        return audit_citation(CLAIM, SPAN, judge=judge)

    with pytest.raises(JudgeCallError, match="citation audit failed") as caught:
        audit()
    assert openai_server.request_count == 3
    assert (caught.value.usage.input, caught.value.usage.output) == (30, 15)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_attempts_are_passed_on(openai_server: OpenAIServer, asynchronous: bool) -> None:
    """`attempts` bounds the asks of the sync and the async form alike."""
    openai_server.set_default(structured(_verdict("mostly_supported", "x")))
    judge = fast_config(openai_server)

    def audit() -> object:
        """The form under test."""
        if asynchronous:
            return asyncio.run(aaudit_citation(CLAIM, SPAN, judge=judge, attempts=2))
        return audit_citation(CLAIM, SPAN, judge=judge, attempts=2)

    with pytest.raises(JudgeCallError):
        audit()
    assert openai_server.request_count == 2


@pytest.mark.parametrize(
    ("claim", "span", "message"),
    [
        (None, SPAN, "audit_citation: claim must be a non-empty string, got None"),
        ("  ", SPAN, "audit_citation: claim must be a non-empty string, got '  '"),
        (CLAIM, "\n", "audit_citation: cited_span must be a non-empty string, got '\\n'"),
    ],
)
def test_bad_arguments_are_named(claim: Any, span: Any, message: str) -> None:
    """A missing or blank claim or span fails before any judge is resolved, naming it."""
    with pytest.raises(ValueError, match=r"^audit_citation: ") as caught:
        audit_citation(claim, span)
    assert str(caught.value) == message


@pytest.mark.parametrize("asynchronous", [False, True])
def test_judge_options_build_the_judge(openai_server: OpenAIServer, asynchronous: bool) -> None:
    """Without `judge`, the keyword options are a JudgeConfig's (as for the evaluators)."""
    openai_server.set_default(structured(_verdict("fully_supported", "capital of France")))
    options: dict[str, Any] = {
        "model": "judge-model",
        "base_url": openai_server.base_url,
        "api_key": "test-key",
        "cache": "off",
    }
    if asynchronous:
        result = asyncio.run(aaudit_citation(CLAIM, SPAN, **options))
    else:
        result = audit_citation(CLAIM, SPAN, **options)
    assert result.verdict == "fully_supported" and openai_server.request_count == 1


@pytest.mark.parametrize("stricter", [False, True])
def test_a_stored_verdict_is_found_under_its_stable_key(
    openai_server: OpenAIServer, stricter: bool
) -> None:
    """Each pass is cached under (prompt version, model, schema, {claim, span}); the second
    pass of stricter mode under the version plus `/span_first`. Found there, nothing is asked."""
    cache = MemoryCache()
    inputs = {"claim": CLAIM, "span": SPAN}
    versions = {
        AUDIT_PROMPT_VERSION: _verdict("fully_supported", "capital of France"),
        AUDIT_PROMPT_VERSION + "/span_first": _verdict("partially_supported", "capital"),
    }
    for version, body in versions.items():
        cache.set(cache_key(version, "judge-model", "AuditReply", inputs), _json(body))
    judge = JudgeClient(fast_config(openai_server), cache=cache)
    result = audit_citation(CLAIM, SPAN, judge=judge, stricter=stricter)
    assert openai_server.request_count == 0
    assert result.verdict == ("partially_supported" if stricter else "fully_supported")
    assert result.passes == (2 if stricter else 1)


def _json(body: dict[str, str]) -> str:
    """A cached reply as the client stores it."""
    return json.dumps(body)
