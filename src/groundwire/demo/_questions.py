"""The demo's questions about the bundled handbook (kept apart: no LangChain needed)."""

from __future__ import annotations

from typing import Final

__all__ = ["QUESTIONS"]

QUESTIONS: Final[tuple[str, ...]] = (
    "Does the library charge late fees?",
    "For how long may books be borrowed?",
    "When is the main branch open?",
    "Why does the reading hall have tall windows?",
    "Do I need a password for the wireless internet?",
    "What was the library in 1887?",
    "How much does printing cost?",
    "Can the study rooms be reserved?",
    "Who can hold a library card?",
    "How long does an interlibrary loan request take, and what does it cost?",
    "What does the local history archive hold?",
    "When did the Northpoint branch open?",
)
"""The demo's questions about the bundled handbook, asked in this order."""
