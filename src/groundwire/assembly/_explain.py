"""Explain one trace: its turn roots, retrieval spans, where each part of a turn was read, and
why it gave no turn (for `groundwire inspect` and the empty-result diagnoses).

It runs the same assembly as `turns_from_spans` (`_assemble`, `build_turn`), asking it to note
the origin of each fact, so what it says is what the assembler did.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from groundwire import semconv
from groundwire._types import RagTurn
from groundwire.assembly._dialects import DIALECTS, INPUT_KEYS, OUTPUT_KEYS, Dialect
from groundwire.assembly._events import CONTENT_EVENT_KEY, with_event_content
from groundwire.assembly._kinds import KIND_GENERATION, KIND_RETRIEVER
from groundwire.assembly._log_record import LogRecordData
from groundwire.assembly._pass import assemble_tree, record_of
from groundwire.assembly._reader import SpanReader
from groundwire.assembly._record import SpanRecord
from groundwire.assembly._tree import TraceTree

_EVENT_KEYS = frozenset(
    {"gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"}
)
"""Attributes that may have been copied from a correlated event."""

__all__ = ["Origin", "TraceReport", "TurnReport", "explain_traces", "no_turn_reason"]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where one part of a turn was read: the span and `"<dialect>: <attribute>"`."""

    span_id: str
    span_name: str
    origin: str | None
    count: int | None = None
    """For contexts: how many documents this span gave."""


@dataclass(slots=True)
class TurnReport:
    """One turn root: the turn (or None and `reason`) and where its parts came from."""

    root_id: str
    root_name: str
    turn: RagTurn | None
    query: Origin | None = None
    answer: Origin | None = None
    contexts: list[Origin] = field(default_factory=list)
    reason: str | None = None
    missing_parent: bool = False
    """The root stands in for a parent span that never arrived (its children made the turn)."""


@dataclass(slots=True)
class TraceReport:
    """What the assembler made of one trace."""

    trace_id: str
    service: str | None
    spans: int
    dialects: list[str]
    """Dialects whose own attributes appear on the trace's spans, in precedence order."""
    retrievals: list[tuple[str, str, str]]
    """Retrieval spans: `(span_id, name, dialect that named it a retriever)`."""
    turns: list[TurnReport]
    reason: str | None
    """Why the trace gave no turn; None when it gave one."""
    missing_parents: list[str] = field(default_factory=list)
    """Span ids that spans name as their (local) parent but that never arrived."""

    @property
    def turn_count(self) -> int:
        """Turns the trace gave."""
        return sum(1 for report in self.turns if report.turn is not None)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (for `groundwire inspect --json`)."""

        def origin(found: Origin | None) -> dict[str, Any] | None:
            if found is None:
                return None
            out: dict[str, Any] = {
                "span_id": found.span_id,
                "span": found.span_name,
                "read_from": found.origin,
            }
            if found.count is not None:
                out["documents"] = found.count
            return out

        return {
            "trace_id": self.trace_id,
            "service": self.service,
            "spans": self.spans,
            "dialects": self.dialects,
            "retrievals": [
                {"span_id": span_id, "span": name, "dialect": dialect}
                for span_id, name, dialect in self.retrievals
            ],
            "turns": [
                {
                    "root_span_id": report.root_id,
                    "root": report.root_name,
                    "turn": report.turn.model_dump(mode="json") if report.turn else None,
                    "query": origin(report.query),
                    "answer": origin(report.answer),
                    "contexts": [origin(found) for found in report.contexts],
                    "reason": report.reason,
                    "missing_parent": report.missing_parent,
                }
                for report in self.turns
            ],
            "reason": self.reason,
            "missing_parents": self.missing_parents,
        }


def explain_traces(
    spans: Iterable[object], logs: Iterable[LogRecordData] = ()
) -> list[TraceReport]:
    """One report per trace in `spans` (SDK spans or `SpanRecord`s), in first-seen order.

    `logs`: log-based events whose message content is put back on their spans, as
    `turns_from_spans` does.
    """
    records: Iterable[SpanRecord] = (record_of(span) for span in spans)
    if logs:
        records = with_event_content(records, logs)
    trees: dict[str, TraceTree] = {}
    for record in records:
        trees.setdefault(record.trace_id, TraceTree()).add(record)
    return [_explain(trace_id, tree) for trace_id, tree in trees.items()]


def _explain(trace_id: str, tree: TraceTree) -> TraceReport:
    """The report of one trace."""
    reader = SpanReader(None)
    records = list(tree.spans.values())  # before assembly adds stand-ins for missing parents
    missing = sorted(
        {
            record.parent_span_id
            for record in records
            if record.parent_span_id is not None
            and not record.parent_is_remote
            and record.parent_span_id not in tree.spans
        }
    )
    notes: list[dict[str, Any]] = []
    assemble_tree(tree, reader, explain=notes)
    turns = [_turn_report(tree, note) for note in notes]
    retrievals = [
        (record.span_id, record.name, _naming_dialect(record))
        for record in sorted(records, key=lambda r: r.start_time_ns)
        if reader.kind(record) == KIND_RETRIEVER
    ]
    service = next(
        (
            value
            for record in records
            if isinstance(value := record.resource.get(semconv.SERVICE_NAME), str)
        ),
        None,
    )
    report = TraceReport(
        trace_id=trace_id,
        service=service,
        spans=len(records),
        dialects=[d.name for d in DIALECTS if any(d.recognises(r.attributes) for r in records)],
        retrievals=retrievals,
        turns=turns,
        reason=None,
        missing_parents=missing,
    )
    if not report.turn_count:
        report.reason = no_turn_reason(records, reader, turns)
    return report


def _turn_report(tree: TraceTree, note: dict[str, Any]) -> TurnReport:
    """A `TurnReport` from the notes `build_turn` left."""
    root = tree.spans[note["root"]]

    def origin(found: Any, count: int | None = None) -> Origin | None:
        if not found:
            return None
        span_id, where = found[0], found[1]
        record = tree.spans.get(span_id)
        name = record.name if record is not None else "?"
        event = record.attributes.get(CONTENT_EVENT_KEY) if record is not None else None
        if event and where and where.split(": ", 1)[-1] in _EVENT_KEYS:
            where = f"{where} (event {event})"
        return Origin(span_id, name, where, count)

    contexts = [origin(item[:2], item[2]) for item in note.get("contexts", ())]
    return TurnReport(
        root_id=root.span_id,
        root_name=root.name,
        turn=note.get("turn"),
        query=origin(note.get("query")),
        answer=origin(note.get("answer")),
        contexts=[found for found in contexts if found is not None],
        reason=note.get("reason"),
        missing_parent=bool(note.get("missing_parent")),
    )


def _naming_dialect(record: SpanRecord) -> str:
    """The dialect whose attributes made `record` a retriever."""
    for dialect in DIALECTS:
        if dialect.kind(record.attributes) is not None:
            return dialect.name
    return "?"


def _dialect_named(name: str) -> Dialect | None:
    """The dialect of that name."""
    return next((dialect for dialect in DIALECTS if dialect.name == name), None)


def no_turn_reason(
    records: list[SpanRecord], reader: SpanReader, turns: list[TurnReport] | None = None
) -> str:
    """Why these spans (one trace) gave no turn, in one sentence naming what was looked for."""
    retrievers = [record for record in records if reader.kind(record) == KIND_RETRIEVER]
    if not retrievers:
        looked_for = ", ".join(d.retrieval_hint for d in DIALECTS)
        models = any(reader.kind(record) == KIND_GENERATION for record in records)
        what = "model calls but no retrieval span" if models else "no retrieval span"
        return f"{what} recognised (looked for {looked_for})"
    dialect = _dialect_named(_naming_dialect(retrievers[0]))
    content = any(
        key in record.attributes for record in records for key in (*INPUT_KEYS, *OUTPUT_KEYS)
    ) or any(reader.documents(record) for record in retrievers)
    if not content:
        switch = dialect.content_switch if dialect is not None else "content capture off"
        return f"content not recorded ({switch})"
    for report in turns or ():
        if report.reason is not None:
            return f"turn root {report.root_name!r}: {report.reason}"
    if not any(reader.answer(record) is not None for record in records):
        return "no span recorded an answer (an output with text) around the retrieval"
    if any(record.end_time_ns is None for record in records):
        return "the trace is not finished (a span is still open)"
    return (
        "no span around the retrieval recorded both an input and an answer "
        "(the turn root must be an ancestor of a retriever)"
    )
