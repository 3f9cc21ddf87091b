"""`OfflineStandInChatModel`: an offline stand-in for a chat model, for the demo and examples.

It is not a language model. It reads the numbered passages in its prompt (`[1] ...`), picks the
clause that best matches the question, and answers by quoting it the way real models quote:
exactly, re-spaced, with a one-word slip, shortened with an ellipsis, not at all (a paraphrase),
or by inventing a quote the sources never said. The style is drawn from a random generator
seeded by `seed` and the question, so the same prompt always gets the same answer.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any, Final, Literal, get_args

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from groundwire.demo._chat import Reply, ReplyingChatModel
from groundwire.demo._words import content_words, sentences

__all__ = [
    "QUOTE_STYLES",
    "STAND_IN_MODEL_NAME",
    "OfflineStandInChatModel",
    "QuoteStyle",
    "stand_in_answer",
]

STAND_IN_MODEL_NAME: Final = "groundwire-offline-stand-in"
"""The model name the stand-in reports (it shows on LLM spans as `gen_ai.request.model`)."""

QuoteStyle = Literal["exact", "respaced", "slip", "ellipsis", "paraphrase", "invented"]
"""How the stand-in quotes its source in one answer."""
QUOTE_STYLES: Final[tuple[QuoteStyle, ...]] = get_args(QuoteStyle)
_WEIGHTS: Final = (4, 1, 2, 1, 1, 2)
"""Relative frequency of each style, in `QUOTE_STYLES` order: mostly faithful, sometimes not."""

_PASSAGE = re.compile(r"^\[(\d+)\]\s*(.+)$", re.MULTILINE)
_SLIPS: Final = {
    "water": "sea",
    "three": "two",
    "two": "three",
    "weekdays": "weekends",
    "free": "cheap",
    "nine": "eight",
    "ten": "eleven",
    "week": "month",
    "weeks": "months",
    "tall": "wide",
    "late": "overdue",
    "six": "four",
}
"""Plausible one-word slips a model makes when it quotes from memory."""
_INVENTED: Final = (
    "the reading hall stays open around the clock during exam weeks",
    "a fine of one dollar a day is charged for every late item",
    "members may bring their dogs into the reading hall on Fridays",
    "coffee and sandwiches are served in the reading hall every morning",
)
"""Quotes no source says: what a model produces when it fabricates a citation."""
_NOT_FOUND: Final = "I could not find anything about that in the sources I was given."


def _best_clause(
    question: str, passages: Sequence[tuple[int, str]]
) -> tuple[int, str, str | None] | None:
    """(passage number, clause, the clause after it) sharing most words with the question.

    The earliest clause wins a tie; the following clause is None at the end of its passage.
    """
    wanted = set(content_words(question))
    best: tuple[int, int, str, str | None] | None = None
    for number, text in passages:
        clauses = sentences(text)
        for index, clause in enumerate(clauses):
            overlap = len(wanted & set(content_words(clause)))
            if best is None or overlap > best[0]:
                after = clauses[index + 1] if index + 1 < len(clauses) else None
                best = (overlap, number, clause, after)
    return None if best is None else best[1:]


def _slip(clause: str, rng: random.Random) -> str:
    """The clause with one word changed (a known slip), or one middle word dropped."""
    words = clause.split(" ")
    slips = [i for i, word in enumerate(words) if word.lower().strip(",") in _SLIPS]
    if slips:
        index = rng.choice(slips)
        word = words[index]
        comma = "," if word.endswith(",") else ""
        words[index] = _SLIPS[word.lower().strip(",")] + comma
    elif len(words) > 4:
        del words[rng.randrange(1, len(words) - 1)]
    return " ".join(words)


def _respace(clause: str, rng: random.Random) -> str:
    """The clause lowercased at its start with one space doubled, as models re-flow text."""
    words = clause.split(" ")
    if len(words) > 2:
        index = rng.randrange(1, len(words) - 1)
        words[index] = " " + words[index]
    text = " ".join(words)
    return text[:1].lower() + text[1:]


def _ellipsis(clause: str, after: str | None) -> str:
    """The clause, an ellipsis, and the last five words of the clause after it (as models elide).

    At the end of a passage, the clause's own first and last four words around an ellipsis.
    """
    if after is not None:
        return clause + " \u2026 " + " ".join(after.split(" ")[-5:])
    words = clause.split(" ")
    if len(words) < 11:
        return clause
    return " ".join(words[:4]) + " \u2026 " + " ".join(words[-4:])


def stand_in_answer(
    question: str,
    passages: Sequence[tuple[int, str]],
    *,
    seed: int = 0,
    styles: Sequence[QuoteStyle] = QUOTE_STYLES,
) -> tuple[str, QuoteStyle | None]:
    """The stand-in's answer to `question` over numbered `passages`, and the style it used.

    The style is drawn from `styles` (with their usual relative weights); `styles=("exact",)`
    makes a faithful extractive reader.
    """
    unknown = [style for style in styles if style not in QUOTE_STYLES]
    if not styles or unknown:
        raise ValueError(f"styles must be a non-empty subset of {QUOTE_STYLES}, got {styles!r}")
    found = _best_clause(question, passages)
    if found is None:
        return _NOT_FOUND, None
    number, clause, after = found
    rng = random.Random(f"{seed}\x00{question}")
    weights = [_WEIGHTS[QUOTE_STYLES.index(style)] for style in styles]
    style: QuoteStyle = rng.choices(list(styles), weights=weights)[0]
    cite = f"[{number}]"
    if style == "paraphrase":
        return f"In short, {clause[:1].lower()}{clause[1:]} {cite}.", style
    quoted = {
        "exact": clause,
        "respaced": _respace(clause, rng),
        "slip": _slip(clause, rng),
        "ellipsis": _ellipsis(clause, after),
        "invented": rng.choice(_INVENTED),
    }[style]
    lead = rng.choice(("The handbook says", "According to the sources,", "It says that"))
    return f"{lead} \u201c{quoted}\u201d {cite}.", style


def _text(message: BaseMessage) -> str:
    """A message's text, whether its content is a string or a list of parts."""
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in content
        if isinstance(part, str | dict)
    )


class OfflineStandInChatModel(ReplyingChatModel):
    """Offline stand-in for a chat model (not an LLM): quotes, and sometimes misquotes, its prompt.

    Deterministic: the same messages and `seed` always give the same answer. The question is the
    last human message; the sources are the prompt's numbered lines (`[1] text`). The answer's
    `response_metadata` says which quoting style was used.
    """

    model_name: str = STAND_IN_MODEL_NAME
    seed: int = 0
    styles: tuple[QuoteStyle, ...] = QUOTE_STYLES
    """The quoting styles it may use; `("exact",)` makes it a faithful extractive reader."""

    @property
    def _llm_type(self) -> str:
        """LangChain's type tag for this model."""
        return "offline-stand-in"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        """What identifies this model in LangChain's invocation parameters (and on spans)."""
        return {"model_name": self.model_name, "seed": self.seed, "styles": self.styles}

    def _reply(self, messages: list[BaseMessage], stop: list[str] | None) -> Reply:
        """Answer the last human message from the prompt's numbered sources."""
        questions = [_text(m) for m in messages if isinstance(m, HumanMessage)]
        if not questions:
            raise ValueError("OfflineStandInChatModel: the prompt has no human message to answer")
        prompt = "\n".join(_text(m) for m in messages if not isinstance(m, AIMessage))
        passages = [(int(n), text) for n, text in _PASSAGE.findall(prompt)]
        answer, style = stand_in_answer(questions[-1], passages, seed=self.seed, styles=self.styles)
        sent, received = len(prompt.split()), len(answer.split())
        return Reply(
            answer, self.model_name, {"quote_style": style}, (sent, received, sent + received)
        )
