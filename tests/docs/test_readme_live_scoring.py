"""The README's live example keeps up: its `configure()` builds quote_verification without the
embedding model (what the keep-up benchmark measures), and the verdicts stay."""

from __future__ import annotations

from groundwire import Context, RagTurn, get_evaluator
from groundwire.embeddings import EMBEDDING_CACHE
from groundwire.evaluators import QuoteVerification
from tests.benchmarks._keep_up import readme_evaluators

_TEXT = (
    "Everyone is permitted to copy and distribute verbatim copies of this\n"
    "license document, but changing it is not allowed. By contrast, the GNU General Public "
    "License is intended to guarantee your freedom to share and change free software."
)


def test_the_readme_live_example_embeds_nothing() -> None:
    """The README's `configure()` example builds quote_verification with cosine "off": a
    misquoted turn is scored without one embedding, verdicts intact."""
    mapping = readme_evaluators()
    assert list(mapping) == ["quoted_spans", "quote_verification", "groundedness"]
    evaluator = get_evaluator("quote_verification", **mapping["quote_verification"])
    assert isinstance(evaluator, QuoteVerification) and evaluator.options.cosine == "off"
    turn = RagTurn(
        query="q",
        contexts=[Context(text=_TEXT, id="gpl")],
        answer="“VERBATIM COPIES of this” and “the GNU General Public License is not intended”",
    )
    before = EMBEDDING_CACHE.stats()
    score = evaluator.evaluate(turn)
    after = EMBEDDING_CACHE.stats()
    assert (after.hits, after.misses) == (before.hits, before.misses)
    assert [row["cosine_similarity"] for row in score.details["quotes"]] == [None, None]
    assert (score.value, score.label) == (0.5, "some_unverified")
