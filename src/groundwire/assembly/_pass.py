"""One assembly pass over one trace's tree, and the normalisation of input spans.

Shared by `turns_from_spans`, the live `TurnAssembler` and `explain_traces`, so that what
`groundwire inspect` explains is what the assembler did.
"""

from __future__ import annotations

import logging
from typing import Any

from groundwire._types import RagTurn
from groundwire.assembly._build import build_turn
from groundwire.assembly._reader import SpanReader
from groundwire.assembly._record import SpanRecord
from groundwire.assembly._roots import turn_roots
from groundwire.assembly._tree import TraceTree

__all__ = ["assemble_tree", "record_of"]

logger = logging.getLogger("groundwire.assembly")


def record_of(span: object) -> SpanRecord:
    """Normalise one input span; anything else is a TypeError naming its type."""
    if isinstance(span, SpanRecord):
        return span
    from opentelemetry.sdk.trace import ReadableSpan

    if isinstance(span, ReadableSpan):
        return SpanRecord.from_readable(span)
    raise TypeError(
        f"turns_from_spans expects ReadableSpan or SpanRecord objects, got {type(span).__name__}"
    )


def assemble_tree(
    tree: TraceTree,
    reader: SpanReader,
    top: str | None = None,
    explain: list[dict[str, Any]] | None = None,
) -> list[RagTurn]:
    """The turns of one trace (or of the subtree under `top`), by root start time.

    Whatever a strange trace makes fail loses that trace only (logged at debug level). With
    `explain`, one note per turn root is appended (see `build_turn`), with `root` and `turn`.
    """
    turns: list[RagTurn] = []
    try:
        roots = sorted(turn_roots(tree, reader, top), key=lambda root: root.record.start_time_ns)
        for root in roots:
            notes: dict[str, Any] | None = None
            if explain is not None:
                notes = {"root": root.record.span_id}
                explain.append(notes)
            turn = build_turn(tree, root, reader, notes)
            if notes is not None:
                notes["turn"] = turn
            if turn is not None:
                turns.append(turn)
    except Exception:
        logger.debug("a trace could not be assembled; skipped", exc_info=True)
    return turns
