"""`phoenix://` URLs and annotation payloads: pure functions, no server."""

from __future__ import annotations

import math

import pytest

from groundwire import Score
from groundwire.cli._phoenix import looks_like_phoenix, phoenix_target
from groundwire.phoenix import annotation_for, parse_phoenix_url


@pytest.mark.parametrize(
    ("url", "base", "project"),
    [
        ("phoenix://127.0.0.1:6006/default", "http://127.0.0.1:6006", "default"),
        ("phoenix://phoenix.local/my%20app", "http://phoenix.local:6006", "my app"),
        ("phoenixs://example.com/phoenix/rag", "https://example.com:443/phoenix", "rag"),
        ("phoenix://[::1]:7000/p/", "http://[::1]:7000", "p"),
    ],
)
def test_urls_give_base_url_and_project(url: str, base: str, project: str) -> None:
    """Host, port (6006 or 443 by default), path prefix and URL-encoded project are kept apart."""
    target = parse_phoenix_url(url)
    assert (target.base_url, target.project) == (base, project)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:6006/p", "expected phoenix://HOST:PORT/PROJECT"),
        ("phoenix:///p", "no host"),
        ("phoenix://127.0.0.1:6006", "no project"),
        ("phoenix://127.0.0.1:x/p", "port is not a number"),
    ],
)
def test_bad_urls_say_what_is_wrong(url: str, message: str) -> None:
    """A malformed URL is a ValueError quoting it and naming the missing part."""
    with pytest.raises(ValueError, match=message):
        parse_phoenix_url(url)


def test_a_url_folded_by_click_is_restored() -> None:
    """Click's Path turns `phoenix://h/p` into `phoenix:/h/p`; the command restores it."""
    assert looks_like_phoenix(["phoenix:/127.0.0.1:6006/p"])
    assert str(phoenix_target(["phoenix:/127.0.0.1:6006/p"])) == "phoenix://127.0.0.1:6006/p"
    assert not looks_like_phoenix(["traces.jsonl", "C:/traces.jsonl"])
    with pytest.raises(ValueError, match="only input"):
        phoenix_target(["phoenix:/127.0.0.1:6006/p", "traces.jsonl"])


def test_failed_and_not_applicable_scores_carry_no_score() -> None:
    """NaN (failed) becomes label `error` with the error as explanation; n/a keeps its label."""
    failed = annotation_for(
        "00f067aa0ba902b7", Score(name="groundedness", value=math.nan, error="Timeout: judge")
    )
    assert failed["result"] == {"score": None, "label": "error", "explanation": "Timeout: judge"}
    assert failed["annotator_kind"] == "LLM" and failed["metadata"]["error"] == "Timeout: judge"
    skipped = annotation_for("00f067aa0ba902b7", Score(name="quoted_spans", value=None))
    assert skipped["result"]["label"] == "not_applicable"
    assert skipped["annotator_kind"] == "CODE" and skipped["identifier"] == "groundwire"
