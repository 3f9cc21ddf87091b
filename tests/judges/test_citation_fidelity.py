"""`citation_support` checks quotes and supporting phrases the way quote verification does."""

from __future__ import annotations

import unicodedata

import pytest

from groundwire import RagTurn
from groundwire.evaluators.citation_support import resolve_citations
from groundwire.testing import OpenAIServer, structured
from tests.judges._helpers import AUDIT, CLAIMS, route
from tests.judges.test_citation_support import audits, make, score, verdict

CONTEXTS = [
    "Refunds are given within 30 days of purchase, and members shall not resell books.",
    "The café on the first floor serves crème brûlée every Friday.",
]


def test_misquoted_quote_is_not_supported_without_audit(openai_server: OpenAIServer) -> None:
    """A quote that changes a number is `quote_misquoted`, not supported, and never audited."""
    claim = "Refunds come “within 60 days of purchase” [1]."
    openai_server.set_default(
        route(
            {
                CLAIMS: [structured({"claims": [claim]})],
                AUDIT: [structured(verdict("fully_supported", "within 30 days of purchase"))],
            }
        )
    )
    turn = RagTurn(query="refunds?", contexts=CONTEXTS, answer=claim)
    result = score(make(openai_server), turn)
    quoted = [pair for pair in result.details["pairs"] if pair["kind"] == "quote"]
    (pair,) = quoted
    assert pair["verdict"] == "not_supported"
    assert pair["flags"] == ["quote_misquoted"]
    assert "number changed: '30' -> '60'" in pair["basis"]
    assert len(audits(openai_server)) == 1  # only the [1] marker was audited


def test_resolved_misquote_names_the_change() -> None:
    """resolve_citations keeps the reason of a misquote; a faithful quote resolves."""
    (bad,) = resolve_citations("It says “members shall resell books”.", CONTEXTS)
    assert bad.problem == "quote_misquoted" and bad.context_index is None
    assert bad.reason == "negation changed: 'shall not' -> 'shall'"
    (good,) = resolve_citations("It says “members shall not resel books”.", CONTEXTS)
    assert good.problem is None and good.context_index == 0


@pytest.mark.parametrize(
    "phrase",
    [
        unicodedata.normalize("NFD", "serves crème brûlée every Friday"),  # another Unicode form
        "serves creme brulee every Friday",  # accents dropped
        "The Café on the first floor serves",  # re-cased
        "serves crème brûlée evrey Friday",  # a typo
    ],
)
def test_phrase_with_harmless_slips_counts_as_in_the_span(
    openai_server: OpenAIServer, phrase: str
) -> None:
    """A supporting phrase that differs from the span only harmlessly is not capped."""
    claim = "The café serves crème brûlée on Fridays [2]."
    openai_server.set_default(
        route(
            {
                CLAIMS: [structured({"claims": [claim]})],
                AUDIT: [structured(verdict("fully_supported", phrase))],
            }
        )
    )
    turn = RagTurn(query="dessert?", contexts=CONTEXTS, answer=claim)
    result = score(make(openai_server), turn)
    (pair,) = result.details["pairs"]
    assert pair["verdict"] == "fully_supported" and pair["flags"] == []
    assert pair["phrase_in_span"] is True
    assert result.value == 1.0


def test_phrase_that_changes_meaning_stays_capped_and_names_the_change(
    openai_server: OpenAIServer,
) -> None:
    """A supporting phrase with a changed number keeps the cap, flagged with the kind."""
    claim = "Refunds are given within 60 days [1]."
    openai_server.set_default(
        route(
            {
                CLAIMS: [structured({"claims": [claim]})],
                AUDIT: [structured(verdict("fully_supported", "given within 60 days of purchase"))],
            }
        )
    )
    turn = RagTurn(query="refunds?", contexts=CONTEXTS, answer=claim)
    result = score(make(openai_server), turn)
    (pair,) = result.details["pairs"]
    assert pair["verdict"] == "partially_supported"
    assert pair["flags"] == ["phrase_not_in_span", "phrase_number_changed"]
    assert result.value == 0.0


def test_invented_phrase_stays_flagged(openai_server: OpenAIServer) -> None:
    """A phrase found nowhere keeps only the phrase_not_in_span flag and the cap."""
    claim = "Refunds are quick [1]."
    openai_server.set_default(
        route(
            {
                CLAIMS: [structured({"claims": [claim]})],
                AUDIT: [structured(verdict("fully_supported", "money back on the same day"))],
            }
        )
    )
    turn = RagTurn(query="refunds?", contexts=CONTEXTS, answer=claim)
    (pair,) = score(make(openai_server), turn).details["pairs"]
    assert pair["verdict"] == "partially_supported" and pair["flags"] == ["phrase_not_in_span"]
