"""`explain_traces` and `diagnose`: what `groundwire inspect` and the empty-result diagnoses say
about a trace (docs/assembly.md, "When no turn is found"), from hand-built records.
"""

from __future__ import annotations

import json
from typing import Any

from groundwire.assembly import Diagnoses, TraceFamily, diagnose, explain_traces
from groundwire.assembly._explain import Origin
from tests.assembly_records import KIND, OP, oi, oi_docs, rag_trace, record, sid, tid

LOOKED_FOR = (
    "openinference.span.kind=RETRIEVER, gen_ai.operation.name=retrieval, "
    "gen_ai.operation.name=vector_db_retrieve, traceloop.entity.name=*Retriever.task, "
    "mlflow.spanType=RETRIEVER"
)


def _reason(records: list[Any]) -> str | None:
    (report,) = explain_traces(records)
    return report.reason


def test_report_of_a_whole_turn() -> None:
    """Service, span count, dialects seen, retrievals, and where each part was read."""
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a", OP: "invoke_workflow"}),
        retriever=oi("RETRIEVER", **oi_docs("d1", "d2")),
        model=oi("LLM"),
        resource={"service.name": "svc"},
    )
    records[2] = record(3, 1, start=30, end=40, attributes={"mlflow.spanType": "LLM"})
    (report,) = explain_traces(records)
    assert report.trace_id == "ab" * 16
    assert (report.service, report.spans, report.reason) == ("svc", 3, None)
    assert report.dialects == ["openinference", "genai", "mlflow"]
    assert report.retrievals == [(sid(2), "retrieve", "openinference")]
    assert report.turn_count == 1
    (turn,) = report.turns
    assert (turn.root_id, turn.root_name, turn.reason) == (sid(1), "root", None)
    assert turn.turn is not None and turn.turn.answer == "a"
    assert turn.query == Origin(sid(1), "root", "openinference: input.value")
    assert turn.answer == Origin(sid(1), "root", "openinference: output.value")
    assert turn.contexts == [Origin(sid(2), "retrieve", "openinference: retrieval.documents", 2)]


def test_report_as_dict_is_json_ready() -> None:
    """`as_dict` (inspect --json): every field, origins with `documents` only for contexts."""
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
        retriever=oi("RETRIEVER", **oi_docs("d1")),
        model=oi("LLM"),
    )
    (report,) = explain_traces(records)
    data = report.as_dict()
    assert json.loads(json.dumps(data)) == data
    turn = data["turns"][0]
    assert turn["turn"]["query"] == "q"
    del turn["turn"]
    assert data == {
        "trace_id": "ab" * 16,
        "service": None,
        "spans": 3,
        "dialects": ["openinference"],
        "retrievals": [{"span_id": sid(2), "span": "retrieve", "dialect": "openinference"}],
        "turns": [
            {
                "root_span_id": sid(1),
                "root": "root",
                "query": {
                    "span_id": sid(1),
                    "span": "root",
                    "read_from": "openinference: input.value",
                },
                "answer": {
                    "span_id": sid(1),
                    "span": "root",
                    "read_from": "openinference: output.value",
                },
                "contexts": [
                    {
                        "span_id": sid(2),
                        "span": "retrieve",
                        "read_from": "openinference: retrieval.documents",
                        "documents": 1,
                    }
                ],
                "reason": None,
                "missing_parent": False,
            }
        ],
        "reason": None,
        "missing_parents": [],
    }


def test_failed_turn_report_as_dict() -> None:
    """A turn root without a query: no turn, the reason, null origins."""
    records = rag_trace(
        root=oi("CHAIN", **{"input.value": '{"a": 1, "b": 2}', "output.value": "a"}),
        retriever=oi("RETRIEVER", **oi_docs("d1")),
        model=oi("LLM"),
    )
    (report,) = explain_traces(records)
    reason = "no query in the turn root's input, its retrievers' or model calls'"
    assert report.reason == f"turn root 'root': {reason}"
    (turn,) = report.as_dict()["turns"]
    assert turn["turn"] is None
    assert turn["query"] is None
    assert turn["reason"] == reason
    assert turn["answer"]["read_from"] == "openinference: output.value"


def test_retrievals_are_listed_in_start_order_with_their_dialect() -> None:
    """Each retrieval span with the dialect that named it a retriever."""
    records = [
        record(1, start=0, end=100, attributes=oi("CHAIN", **{"input.value": "q"})),
        record(5, 1, start=30, end=31, name="late", attributes={"mlflow.spanType": "RETRIEVER"}),
        record(4, 1, start=20, end=21, name="mid", attributes={OP: "vector_db_retrieve"}),
        record(3, 1, start=10, end=11, name="early", attributes={OP: "retrieval", KIND: 3}),
        record(2, 1, start=5, end=6, name="model", attributes={OP: "chat"}),
    ]
    (report,) = explain_traces(records)
    assert report.retrievals == [
        (sid(3), "early", "genai"),
        (sid(4), "mid", "openllmetry"),
        (sid(5), "late", "mlflow"),
    ]


def test_service_is_the_first_string_service_name() -> None:
    """`service.name` from the first span whose resource has it as a string."""
    records = [
        record(1, start=0, end=10, resource={"service.name": 5}),
        record(2, 1, start=1, end=2, resource={"service.name": "real"}),
        record(3, 1, start=3, end=4, resource={"service.name": "later"}),
    ]
    (report,) = explain_traces(records)
    assert report.service == "real"


def test_no_retrieval_reasons() -> None:
    """No retriever: say what was looked for, and whether model calls were seen."""
    plain = [record(1, attributes={"input.value": "q", "output.value": "a"})]
    assert _reason(plain) == f"no retrieval span recognised (looked for {LOOKED_FOR})"
    with_model = [*plain, record(2, 1, attributes={OP: "chat"})]
    assert _reason(with_model) == (
        f"model calls but no retrieval span recognised (looked for {LOOKED_FOR})"
    )


def test_content_off_names_the_retrievers_dialect_switch() -> None:
    """A retriever but no input, output or document anywhere: that dialect's content switch."""
    cases = {
        KIND: (
            "RETRIEVER",
            "OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS (or GROUNDWIRE_HIDE_*)",
        ),
        OP: (
            "retrieval",
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY with "
            "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental",
        ),
        "traceloop.entity.name": ("BM25Retriever.task", "TRACELOOP_TRACE_CONTENT=false"),
        "mlflow.spanType": ("RETRIEVER", "spans without mlflow.spanInputs / mlflow.spanOutputs"),
    }
    for key, (value, switch) in cases.items():
        records = [record(1, start=0, end=9), record(2, 1, start=1, end=2, attributes={key: value})]
        assert _reason(records) == f"content not recorded ({switch})"


def test_documents_alone_count_as_content() -> None:
    """A retriever with documents but no span with input/output: no answer anywhere."""
    records = [
        record(1, start=0, end=9),
        record(2, 1, start=1, end=2, attributes=oi("RETRIEVER", **oi_docs("d"))),
    ]
    assert _reason(records) == (
        "no span recorded an answer (an output with text) around the retrieval"
    )
    outputs_only = [
        record(1, start=0, end=9, attributes={"output.value": "  "}),
        record(2, 1, start=1, end=2, attributes=oi("RETRIEVER")),
    ]
    assert _reason(outputs_only) == (
        "no span recorded an answer (an output with text) around the retrieval"
    )
    inputs_only = [
        record(1, start=0, end=9, attributes={"input.value": "q"}),
        record(2, 1, start=1, end=2, attributes=oi("RETRIEVER")),
    ]
    assert _reason(inputs_only) == (
        "no span recorded an answer (an output with text) around the retrieval"
    )


def test_open_trace_and_root_below_the_retrieval_reasons() -> None:
    """An answer exists but no candidate: open span, else no ancestor with input and answer."""
    open_trace = [
        record(1, start=0, end=None, attributes={"input.value": "q"}),
        record(2, 1, start=1, end=2, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(3, 1, start=3, end=4, attributes=oi("LLM", **{"output.value": "a"})),
    ]
    assert _reason(open_trace) == "the trace is not finished (a span is still open)"
    # finished, but the model was called before the retrieval: nothing answered from it
    finished = [
        record(1, start=0, end=9, attributes={"input.value": "q"}),
        record(2, 1, start=5, end=6, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(3, 1, start=1, end=2, attributes=oi("LLM", **{"output.value": "a"})),
    ]
    assert _reason(finished) == (
        "no span around the retrieval recorded both an input and an answer "
        "(the turn root must be an ancestor of a retriever)"
    )


def test_event_content_is_marked_in_origins() -> None:
    """A fact read from an attribute copied from a log event names the event."""
    from groundwire.assembly._log_record import LogRecordData

    messages = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ev a"}]}])
    records = [
        record(
            1, start=0, end=100, name="root", attributes={"input.value": "q", "output.value": "a"}
        ),
        record(2, 1, start=10, end=20, attributes=oi("RETRIEVER", **oi_docs("d"))),
        record(3, 1, start=30, end=40, attributes={OP: "chat"}),
    ]
    log = LogRecordData(
        event_name="gen_ai.client.inference.operation.details",
        trace_id=records[0].trace_id,
        span_id=sid(1),
        time_ns=1,
        attributes={"gen_ai.output.messages": messages},
    )
    (report,) = explain_traces(records, [log])
    (turn,) = report.turns
    assert turn.answer == Origin(sid(1), "root", "openinference: output.value")
    records[0] = record(1, start=0, end=100, name="root", attributes={"input.value": "q"})
    (report,) = explain_traces(records, [log])
    assert report.turns[0].answer == Origin(
        sid(1),
        "root",
        "genai: gen_ai.output.messages (event gen_ai.client.inference.operation.details)",
    )
    assert report.turns[0].query == Origin(sid(1), "root", "openinference: input.value")
    assert explain_traces(records)[0].turn_count == 0


def test_reports_per_trace_in_first_seen_order() -> None:
    """One report per trace id, in the order traces first appear."""
    second = [record(1, trace=tid(2), attributes={"input.value": "q"})]
    first = [record(1, trace=tid(1))]
    reports = explain_traces([*second, *first, record(2, 1, trace=tid(2))])
    assert [(r.trace_id, r.spans) for r in reports] == [(tid(2), 2), (tid(1), 1)]


# --- diagnoses ------------------------------------------------------------------------------


def _no_retrieval(number: int, service: str | None, **attributes: Any) -> list[Any]:
    resource = {"service.name": service} if service else {}
    return [record(1, trace=tid(number), resource=resource, attributes=attributes)]


def test_family_description() -> None:
    """Count with the right noun, the service or "an unnamed service", the dialects."""
    family = TraceFamily("svc", ("openinference", "genai"), "why")
    assert family.describe(1) == "1 trace from service svc (openinference, genai): why"
    assert TraceFamily(None, (), "why").describe(2) == "2 traces from an unnamed service: why"
    assert TraceFamily("", (), "why").describe(0) == "0 traces from an unnamed service: why"


def test_diagnose_groups_traces_by_family_most_first() -> None:
    """One line per (service, dialects, reason), most traces first; turns are not counted."""
    spans = [
        *_no_retrieval(1, "a"),
        *_no_retrieval(2, "b", **{KIND: "CHAIN"}),
        *_no_retrieval(3, "b", **{KIND: "CHAIN"}),
        *rag_trace(
            trace=tid(4),
            root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
            retriever=oi("RETRIEVER", **oi_docs("d")),
            model=oi("LLM"),
        ),
    ]
    reason = f"no retrieval span recognised (looked for {LOOKED_FOR})"
    assert diagnose(spans) == [
        f"2 traces from service b (openinference): {reason}",
        f"1 trace from service a: {reason}",
    ]


def test_diagnoses_are_bounded_and_report_new_families_once() -> None:
    """`add` returns a family only when new; past `limit` traces are only counted as other."""
    diagnoses = Diagnoses(limit=3)
    first = diagnoses.add(_no_retrieval(1, "a"))
    assert first is not None and first.service == "a"
    assert diagnoses.add(_no_retrieval(2, "a")) is None
    assert (
        diagnoses.add(
            rag_trace(
                trace=tid(3),
                root=oi("CHAIN", **{"input.value": "q", "output.value": "a"}),
                retriever=oi("RETRIEVER", **oi_docs("d")),
                model=oi("LLM"),
            )
        )
        is None
    )
    assert len(diagnoses) == 2
    assert diagnoses.add(_no_retrieval(4, "c")) is None
    assert diagnoses.other == 1
    assert len(diagnoses) == 3
    reason = f"no retrieval span recognised (looked for {LOOKED_FOR})"
    assert diagnoses.lines() == [
        f"2 traces from service a: {reason}",
        "1 more traces without a turn (not explained)",
    ]
    assert diagnoses.as_list() == [{"service": "a", "dialects": [], "reason": reason, "traces": 2}]


def test_diagnoses_remember_at_most_100_families() -> None:
    """Beyond 100 families, new ones are counted in `other`."""
    diagnoses = Diagnoses(limit=1_000)
    for number in range(1, 103):
        found = diagnoses.add(_no_retrieval(number, f"svc{number}"))
        assert (found is not None) == (number <= 100)
    assert diagnoses.other == 2
    assert len(diagnoses) == 102
    assert len(diagnoses.lines()) == 101
    assert len(diagnoses.as_list()) == 100


def test_as_list_orders_families_by_count() -> None:
    """The JSON view lists the biggest family first."""
    diagnoses = Diagnoses()
    diagnoses.add(_no_retrieval(1, "small"))
    diagnoses.add(_no_retrieval(2, "big"))
    diagnoses.add(_no_retrieval(3, "big"))
    assert [(f["service"], f["traces"]) for f in diagnoses.as_list()] == [("big", 2), ("small", 1)]
    assert [line.split(" from ")[0] for line in diagnoses.lines()] == ["2 traces", "1 trace"]


def test_over_the_limit_every_trace_is_counted_as_other() -> None:
    """Past `limit`, each further trace adds one to `other`."""
    diagnoses = Diagnoses(limit=1)
    diagnoses.add(_no_retrieval(1, "a"))
    diagnoses.add(_no_retrieval(2, "a"))
    diagnoses.add(_no_retrieval(3, "a"))
    assert diagnoses.other == 2
    assert len(diagnoses) == 3


def test_count_skips_reports_with_a_turn() -> None:
    """A report that gave a turn is not counted, whatever its reason field says."""
    from groundwire import RagTurn
    from groundwire.assembly import TraceReport, TurnReport

    turn = TurnReport("r", "root", RagTurn(query="q", answer="a"))
    report = TraceReport("ab" * 16, "svc", 1, [], [], [turn], "stale reason")
    diagnoses = Diagnoses()
    assert diagnoses.count(report) is None
    assert len(diagnoses) == 0
    no_reason = TraceReport("ab" * 16, "svc", 1, [], [], [], None)
    assert diagnoses.count(no_reason) is None
    assert len(diagnoses) == 0


def test_default_diagnoses_explain_a_thousand_traces() -> None:
    """By default 1,000 traces are explained; the next is only counted."""
    diagnoses = Diagnoses()
    for number in range(1, 1_002):
        diagnoses.add(_no_retrieval(number, "a"))
    assert diagnoses.other == 1
    assert diagnoses.as_list()[0]["traces"] == 1_000


def test_missing_parent_is_named_and_its_children_make_the_turn() -> None:
    """A parent span that never arrived is listed, and the turn its children make says that its
    root is a stand-in; the answer names the model call it came from."""
    records = [
        record(
            2, 1, start=1, end=2, attributes=oi("RETRIEVER", **{"input.value": "q"}, **oi_docs("d"))
        ),
        record(3, 1, start=3, end=4, attributes=oi("LLM", **{"output.value": "a"})),
    ]
    (report,) = explain_traces(records)
    assert report.missing_parents == [sid(1)]
    (turn,) = report.turns
    assert turn.missing_parent and turn.root_id == sid(1)
    assert turn.turn is not None and (turn.turn.query, turn.turn.answer) == ("q", "a")
    assert turn.answer is not None and turn.answer.span_id == sid(3)
    assert report.spans == 2
    data = report.as_dict()
    assert data["missing_parents"] == [sid(1)] and data["turns"][0]["missing_parent"] is True
