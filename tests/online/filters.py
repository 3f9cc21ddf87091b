"""A turn filter importable by path, for the GROUNDWIRE_TURN_FILTER tests."""

from __future__ import annotations

from groundwire import RagTurn


def only_questions(turn: RagTurn) -> bool:
    """Score only turns whose query ends with a question mark."""
    return turn.query.rstrip().endswith("?")
