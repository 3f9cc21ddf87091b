"""`citation_support`'s outcomes pinned whole: resolved citations, unresolved pairs, the edge
scores (nothing cited, nothing auditable, claims not split) and the options' checks."""

from __future__ import annotations

import math
from typing import Any

import pytest

from groundwire import RagTurn
from groundwire.evaluators import CitationSupport
from groundwire.evaluators.citation_support import (
    FLAG_OUT_OF_RANGE,
    FLAG_QUOTE_MISQUOTED,
    FLAG_QUOTE_NOT_FOUND,
    Citation,
    has_citations,
    recheck_phrase,
    resolve_citations,
)
from groundwire.judges import FLAG_PASSES_DISAGREE, FLAG_PHRASE_NOT_IN_SPAN, CitationVerdict
from groundwire.testing import OpenAIServer, Reply, structured
from tests.judges._helpers import AUDIT, CLAIMS, route
from tests.judges.test_citation_support import CONTEXTS, audits, by_claim, make, score, verdict

SEINE = CONTEXTS[0]
PEOPLE = CONTEXTS[1]


def _turn(answer: str) -> RagTurn:
    """A turn over the two Paris contexts with `answer`."""
    return RagTurn(query="Tell me about Paris", contexts=CONTEXTS, answer=answer)


def _script(server: OpenAIServer, claims: list[str], audit: Any) -> None:
    """The claims the split returns, and the audit replies."""
    server.set_default(route({CLAIMS: [structured({"claims": claims})], AUDIT: [audit]}))


def test_markers_resolve_in_range_and_name_the_rest() -> None:
    """`[n]` names context n (index_base counts from 0 or 1); one past the last context is out
    of range, with no span."""
    found = resolve_citations("It is so [0] [2] [3].", CONTEXTS, index_base=0)
    assert found == [
        Citation("marker", "[0]", 0, SEINE),
        Citation("marker", "[2]", None, "", FLAG_OUT_OF_RANGE),
        Citation("marker", "[3]", None, "", FLAG_OUT_OF_RANGE),
    ]
    assert resolve_citations("It is so [2].", CONTEXTS) == [Citation("marker", "[2]", 1, PEOPLE)]


def test_quotes_resolve_found_not_found_and_misquoted() -> None:
    """A quote is found in its context, not found, or found but changing a number (misquote)."""
    found = resolve_citations("It is “the capital of France” there.", CONTEXTS)
    assert found == [Citation("quote", "the capital of France", 0, SEINE)]
    missing = resolve_citations("It is “on the river Thames today” there.", CONTEXTS)
    assert missing == [
        Citation("quote", "on the river Thames today", None, "", FLAG_QUOTE_NOT_FOUND)
    ]
    (misquote,) = resolve_citations("It has “about 3.1 million residents” now.", CONTEXTS)
    assert misquote == Citation(
        "quote",
        "about 3.1 million residents",
        None,
        "",
        FLAG_QUOTE_MISQUOTED,
        reason="number changed: '2.1 million' -> '3.1 million'",
    )


def test_quote_style_and_length_decide_what_is_a_quote() -> None:
    """Three words make a quote by default, two do not; straight single quotes are quotes only
    in the ragas style."""
    assert has_citations("He said “the capital city” there.")
    assert not has_citations("He said “the capital” there.")
    assert not has_citations("He said “the capital city” there.", min_words=4)
    single = "He said 'the capital of France' there."
    assert has_citations(single, quote_style="ragas") and not has_citations(single)
    assert resolve_citations("It is “capital of France” here.", CONTEXTS) != []
    assert resolve_citations("It is “capital of France” here.", CONTEXTS, min_quote_words=4) == []
    assert resolve_citations(single, CONTEXTS) == []
    assert resolve_citations(single, CONTEXTS, quote_style="ragas") != []


def _audited(**fields: Any) -> CitationVerdict:
    """An audit result, flagged `phrase_not_in_span` and capped, unless told otherwise."""
    settings: dict[str, Any] = {
        "verdict": "partially_supported",
        "supporting_phrase": "the capital of france",
        "missing": "",
        "basis": "Because.",
        "judge_verdict": "fully_supported",
        "phrase_in_span": False,
        "flags": (FLAG_PHRASE_NOT_IN_SPAN,),
    }
    settings.update(fields)
    return CitationVerdict(**settings)


def test_recheck_phrase_lifts_the_cap_only_when_it_applies() -> None:
    """A phrase found modulo case lifts the cap; without the flag, with a blank phrase or span,
    nothing changes; when two passes disagreed the stricter verdict stays."""
    lifted = recheck_phrase(_audited(), SEINE)
    assert (lifted.verdict, lifted.phrase_in_span, lifted.flags) == ("fully_supported", True, ())
    unflagged = _audited(flags=())
    assert recheck_phrase(unflagged, SEINE) is unflagged
    blank = _audited(supporting_phrase="  ")
    assert recheck_phrase(blank, SEINE) is blank
    assert recheck_phrase(_audited(), "  ").verdict == "partially_supported"
    disagreed = recheck_phrase(
        _audited(flags=(FLAG_PHRASE_NOT_IN_SPAN, FLAG_PASSES_DISAGREE)), SEINE
    )
    assert (disagreed.verdict, disagreed.flags) == ("partially_supported", (FLAG_PASSES_DISAGREE,))


def test_options_are_checked_with_their_names(openai_server: OpenAIServer) -> None:
    """Each bad option is a ValueError naming it and its bound; the bounds themselves are fine."""
    for option, bad, good in (
        ("index_base", -1, 0),
        ("min_quote_words", 0, 1),
        ("max_retries", 0, 1),
    ):
        with pytest.raises(ValueError, match=rf"^CitationSupport: {option} must be an integer "):
            make(openai_server, **{option: bad})
        with pytest.raises(ValueError, match=rf"{option} must be an integer >= {good}, got True"):
            make(openai_server, **{option: True})
        assert getattr(make(openai_server, **{option: good}), option) == good
    with pytest.raises(ValueError, match=r"^CitationSupport: quote_style") as raised:
        make(openai_server, quote_style="bogus")
    assert str(raised.value) == (
        "CitationSupport: quote_style must be 'typographic' or 'ragas', got 'bogus'"
    )
    assert make(openai_server, quote_style="ragas").quote_style == "ragas"
    configured = CitationSupport(model="judge-x", base_url=openai_server.base_url, api_key="k")
    assert configured.judge is not None and configured.judge.model == "judge-x"


def test_no_citation_is_not_applicable_without_a_call(openai_server: OpenAIServer) -> None:
    """No marker and no quote of three words: not applicable, no request; a blank answer has no
    uncited share; the options decide what counts as a quote."""
    two_words = "Paris is “the capital” of France."
    result = score(make(openai_server), _turn(two_words))
    assert (result.value, result.label, result.details) == (
        None,
        "no_citations",
        {"uncited_share": 1.0},
    )
    assert result.explanation == "The answer has no citation marker and no quote."
    assert score(make(openai_server), _turn(" ")).details == {"uncited_share": None}
    three_words = "Paris is “the capital city” of France."
    assert score(make(openai_server, min_quote_words=4), _turn(three_words)).label == "no_citations"
    single = "Paris is 'the capital of France' today."
    assert score(make(openai_server), _turn(single)).label == "no_citations"
    assert openai_server.requests == []


def test_claims_not_split_is_an_error_after_every_attempt(openai_server: OpenAIServer) -> None:
    """A split that never comes back valid is a failed score, after three attempts by default."""
    openai_server.set_default(route({CLAIMS: [Reply.chat("no claims here")]}))
    result = score(make(openai_server), _turn("Paris is the capital [1]."))
    assert math.isnan(result.value) and result.label == "error"
    assert result.error.startswith("JudgeError: could not split the answer into claims: ")
    assert result.usage is not None
    assert len(openai_server.requests) == 3


def test_unresolved_pairs_are_not_supported_with_their_reason(openai_server: OpenAIServer) -> None:
    """An out-of-range marker and a misquote are pairs judged not supported without a call,
    their rows saying why; the claims' verdicts and the score follow."""
    claims = ["Paris is the capital [3].", "It has “about 3.1 million residents” now."]
    _script(openai_server, claims, Reply.error(500, "no audit expected"))
    result = score(make(openai_server), _turn(" ".join(claims)))
    assert (result.value, result.label) == (0.0, "unsupported")
    out_of_range, misquote = result.details["pairs"]
    assert out_of_range == {
        "claim_index": 0,
        "claim": claims[0],
        "citation": "[3]",
        "kind": "marker",
        "context_index": None,
        "span": "",
        "verdict": "not_supported",
        "supporting_phrase": "",
        "missing": claims[0],
        "basis": "The citation [3] could not be resolved (citation_out_of_range).",
        "judge_verdict": "not_supported",
        "phrase_in_span": False,
        "flags": [FLAG_OUT_OF_RANGE],
        "passes": 0,
    } | {key: out_of_range[key] for key in out_of_range.keys() - _PAIR_KEYS}
    assert misquote["basis"] == (
        "The quote about 3.1 million residents misquotes its source "
        "(number changed: '2.1 million' -> '3.1 million')."
    )
    assert result.details["claims"] == [
        {"claim": claims[0], "citations": ["[3]"], "verdict": "not_supported"},
        {
            "claim": claims[1],
            "citations": ["about 3.1 million residents"],
            "verdict": "not_supported",
        },
    ]
    assert audits(openai_server) == []


_PAIR_KEYS = {
    "claim_index", "claim", "citation", "kind", "context_index", "span", "verdict",
    "supporting_phrase", "missing", "basis", "judge_verdict", "phrase_in_span", "flags", "passes",
}  # fmt: skip
"""The keys of a pair row pinned above (any other key, e.g. usage, is compared as it is)."""


def test_counts_explanation_and_index_base(openai_server: OpenAIServer) -> None:
    """Two of three cited claims fully supported (the other not): 2/3 and the explanation says
    so; `[0]` with index_base=0 names the first context; stricter audits twice."""
    claims = ["Paris is the capital [0].", "Paris is on the Seine [0].", "Paris is big [1]."]
    _script(
        openai_server,
        claims,
        by_claim(
            {
                "capital": verdict("fully_supported", "capital of France"),
                "Seine": verdict("fully_supported", "It lies on the Seine"),
                "big": verdict("not_supported", "", "big"),
            }
        ),
    )
    result = score(make(openai_server, index_base=0), _turn(" ".join(claims)))
    assert result.value == pytest.approx(2 / 3) and result.label == "partially_supported"
    assert result.explanation == (
        "2 of 3 cited claims fully supported, 0 partially, 1 not; 0 of 3 claims uncited."
    )
    assert [pair["context_index"] for pair in result.details["pairs"]] == [0, 0, 1]
    assert [pair["passes"] for pair in result.details["pairs"]] == [1, 1, 1]
    assert [row["claim_index"] for row in result.details["pairs"]] == [0, 1, 2]
    assert result.details["pairs"][0]["claim"] == claims[0]
    assert result.details["pairs"][0]["span"] == SEINE
    stricter = score(make(openai_server, index_base=0, stricter=True), _turn(" ".join(claims)))
    assert [pair["passes"] for pair in stricter.details["pairs"]] == [2, 2, 2]


def test_all_supported_is_labelled_supported(openai_server: OpenAIServer) -> None:
    """Every cited claim fully supported: 1.0, `supported`."""
    _script(
        openai_server,
        ["Paris is the capital [1]."],
        structured(verdict("fully_supported", "capital of France")),
    )
    result = score(make(openai_server), _turn("Paris is the capital [1]."))
    assert (result.value, result.label) == (1.0, "supported")


def test_no_audit_succeeding_is_an_error_naming_each(openai_server: OpenAIServer) -> None:
    """Every audit failing: a failed score whose error and details name each pair."""
    claims = ["Paris is the capital [1].", "Paris is big [2]."]
    _script(openai_server, claims, Reply.error(400, "bad request"))
    result = score(make(openai_server, max_retries=1), _turn(" ".join(claims)))
    assert math.isnan(result.value) and result.label == "error"
    errors = result.details["errors"]
    assert [e.split(":")[0] for e in errors] == ["claim 0 [1]", "claim 1 [2]"]
    assert result.error == "JudgeError: no citation could be audited (" + "; ".join(errors) + ")"
    assert [(p["verdict"], p["error"]) for p in result.details["pairs"]] == [
        (None, errors[0].split(": ", 1)[1]),
        (None, errors[1].split(": ", 1)[1]),
    ]
    assert [c["verdict"] for c in result.details["claims"]] == ["error", "error"]
    assert result.details["fully_supported_share"] is None and result.usage is not None


def test_claims_without_citations_are_not_applicable(openai_server: OpenAIServer) -> None:
    """The answer has markers but the split's claims carry none (or there are no claims): not
    applicable, with the details and the usage of the split."""
    _script(openai_server, ["Paris is the capital.", "Paris is big."], Reply.error(500, "none"))
    result = score(make(openai_server), _turn("Paris is the capital [1]. Paris is big."))
    assert (result.value, result.label) == (None, "no_citations")
    assert result.explanation == "No claim of the answer carries a citation."
    assert result.details["n_uncited"] == 2 and result.details["uncited_share"] == 1.0
    assert result.usage is not None
    _script(openai_server, [], Reply.error(500, "none"))
    empty = score(make(openai_server), _turn("Paris is the capital [1]."))
    assert empty.label == "no_citations" and empty.details["uncited_share"] is None
