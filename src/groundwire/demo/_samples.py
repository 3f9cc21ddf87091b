"""Sample turns over the bundled corpus, one per way an answer can quote its sources."""

from __future__ import annotations

from groundwire._types import Context, RagTurn
from groundwire.demo._corpus import load_chunks

# (query, ids of the chunks "retrieved", answer). The comment says what the answer does.
_SAMPLES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # exact quotes
    (
        "Does the library charge late fees?",
        ("borrowing#3", "borrowing#2"),
        "No. The handbook says \u201cThe library no longer charges late fees.\u201d Late items are"
        " instead \u201cblocked from renewal until they come back\u201d.",
    ),
    # quotes re-spaced and re-cased by the model
    (
        "When is the main branch open?",
        ("services#1", "services#2"),
        'It is open "From nine in the morning  to eight in the evening on weekdays" and '
        '"from ten to five on Saturdays"; it is "closed on Sundays and public holidays."',
    ),
    # a slip: "sea" where the source says "water"
    (
        "Who designed the Quay Street building?",
        ("history#2", "history#1"),
        "Margaret Oyelaran, who \u201cinsisted on tall windows facing the sea so that readers"
        " would work by daylight\u201d.",
    ),
    # an ellipsis joining two parts of one sentence
    (
        "How long can I keep a book?",
        ("borrowing#2", "borrowing#3"),
        "Three weeks: books \u201cmay be borrowed for three weeks \u2026 unless another member has"
        " placed a hold on them.\u201d",
    ),
    # an invented quote
    (
        "Do I need to register to use the wifi?",
        ("services#2", "services#3"),
        "Yes, \u201call visitors must register their devices at the front desk\u201d before using"
        " the wireless network.",
    ),
    # no quotes at all: quote evaluators do not apply
    (
        "When was the library founded?",
        ("history#1",),
        "It began in 1887 as a reading room above the harbour master's office.",
    ),
)


def sample_turns() -> list[RagTurn]:
    """The sample turns, contexts ranked in the order listed."""
    chunks: dict[str, Context] = {chunk.id or "": chunk for chunk in load_chunks()}
    turns: list[RagTurn] = []
    for query, chunk_ids, answer in _SAMPLES:
        contexts = [
            chunks[chunk_id].model_copy(update={"rank": rank})
            for rank, chunk_id in enumerate(chunk_ids)
        ]
        turns.append(
            RagTurn(
                query=query,
                contexts=contexts,
                answer=answer,
                attributes={"service.name": "groundwire-demo"},
            )
        )
    return turns
