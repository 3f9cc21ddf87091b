"""`TurnAssembler`: live assembly as spans end, inline `turn_for`, bounded memory."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context as OtelContext
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from groundwire import RagTurn
from groundwire.assembly import SpanRecord, TurnAssembler, turns_from_spans
from groundwire.capture import LiveContent, LiveContentStore
from tests._clocked import ClockedSpans

KIND = "openinference.span.kind"


class AssemblingProcessor(SpanProcessor):
    """What the online runner does: start/add on start/end, turn_for just before a span ends."""

    def __init__(self, assembler: TurnAssembler, *, track_starts: bool = True) -> None:
        self.assembler = assembler
        self.track_starts = track_starts
        self.completed: list[RagTurn] = []
        self.inline: list[RagTurn] = []
        self.ended: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: OtelContext | None = None) -> None:
        if self.track_starts:
            self.assembler.start(SpanRecord.from_readable(span))

    def _on_ending(self, span: Span) -> None:
        turn = self.assembler.turn_for(SpanRecord.from_readable(span))
        if turn is not None:
            self.inline.append(turn)

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)
        self.completed.extend(self.assembler.add(SpanRecord.from_readable(span)))


class App(ClockedSpans):
    """A traced app with a controlled clock, whose spans go through the assembling processor."""

    def __init__(self, assembler: TurnAssembler | None = None, **kwargs: Any) -> None:
        self.assembler = assembler or TurnAssembler()
        self.processor = AssemblingProcessor(self.assembler, **kwargs)
        provider = TracerProvider()
        provider.add_span_processor(self.processor)
        super().__init__(provider, "tests.app", 1_000)

    def rag(self, query: str, answer: str, doc: str = "d") -> None:
        """A chain whose output is set just before it ends, as instrumentors do."""
        with self.span("rag", **{KIND: "CHAIN", "input.value": query}) as root:
            with self.span(
                "retrieve",
                **{KIND: "RETRIEVER", "retrieval.documents.0.document.content": doc},
            ):
                pass
            with self.span("llm", **{KIND: "LLM", "output.value": answer}):
                pass
            root.set_attribute("output.value", answer)


def test_turn_completes_when_the_root_ends_and_matches_offline() -> None:
    """`add` returns the turn exactly when the local root ends, equal to the offline turn."""
    app = App()
    app.rag("q", "a")
    assert [t.answer for t in app.processor.completed] == ["a"]
    assert app.processor.completed == turns_from_spans(app.processor.ended)
    assert (app.assembler.pending_traces, app.assembler.pending_spans) == (0, 0)


def test_turn_for_builds_the_turn_while_the_root_is_open() -> None:
    """Just before the root ends, `turn_for` gives the same turn `add` gives after it ends."""
    app = App()
    app.rag("q", "a")
    assert app.processor.inline == app.processor.completed
    assert len(app.processor.inline) == 1


def test_turn_for_does_not_consume() -> None:
    """Calling `turn_for` twice gives the same turn and leaves the trace pending."""
    assembler = TurnAssembler()
    app = App(assembler)
    records: list[SpanRecord] = []
    with app.span("rag", **{KIND: "CHAIN", "input.value": "q", "output.value": "a"}) as root:
        with app.span(
            "retrieve", **{KIND: "RETRIEVER", "retrieval.documents.0.document.content": "d"}
        ):
            pass
        records.append(SpanRecord.from_readable(root))
        first = assembler.turn_for(records[0])
        second = assembler.turn_for(records[0])
        pending = assembler.pending_spans
    assert first is not None and first == second
    assert pending == 1


def test_nested_chains_are_not_inline_roots_when_starts_are_tracked() -> None:
    """With `start` calls, a chain inside a same-instrumentation chain waits for its ancestor."""
    app = App()
    with app.span("outer", **{KIND: "CHAIN", "input.value": "q"}) as outer:
        app.rag("q", "a")
        outer.set_attribute("output.value", "a")
    assert [t.span_id for t in app.processor.inline] == [t.span_id for t in app.processor.completed]
    assert app.processor.completed[0].span_id == format(outer.get_span_context().span_id, "016x")


def test_without_start_calls_a_nested_chain_is_a_provisional_root() -> None:
    """Without `start` the nested chain looks like a root to `turn_for` (documented limit)."""
    app = App(track_starts=False)
    with app.span("outer", **{KIND: "CHAIN", "input.value": "q"}) as outer:
        app.rag("q", "a")
        outer.set_attribute("output.value", "a")
    assert len(app.processor.inline) == 2
    assert len(app.processor.completed) == 1


def test_chain_under_a_server_span_is_inline_and_completes_at_the_server_end() -> None:
    """A chain under a span of another instrumentation is inline-evaluable and completes later."""
    app = App()
    server_tracer = app.provider.get_tracer("tests.http")
    with server_tracer.start_as_current_span("GET /ask"):
        app.rag("q", "a")
        assert app.processor.completed == []
    assert [t.answer for t in app.processor.inline] == ["a"]
    assert app.processor.completed == app.processor.inline


def test_agent_with_two_rag_calls_gives_two_turns_at_the_agent_end() -> None:
    """Two RAG chains in one agent complete together when the agent ends; neither inline."""
    app = App()
    with app.span("agent", **{KIND: "AGENT", "input.value": "plan"}) as agent:
        for n in (1, 2):
            with app.span("llm", **{KIND: "LLM", "output.value": "call"}):
                pass
            app.rag(f"q{n}", f"a{n}")
        agent.set_attribute("output.value", "done")
    assert [t.answer for t in app.processor.completed] == ["a1", "a2"]
    assert app.processor.inline == []


def test_remote_parent_makes_the_local_root() -> None:
    """A span whose parent is remote (an incoming request) is its process's root."""
    app = App()
    remote = SpanContext(
        trace_id=0x1234, span_id=0x99, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED)
    )
    with trace.use_span(NonRecordingSpan(remote)):
        app.rag("q", "a")
    assert [t.answer for t in app.processor.completed] == ["a"]
    assert app.processor.completed[0].trace_id == format(0x1234, "032x")


def test_two_requests_of_one_distributed_trace_each_give_their_turn() -> None:
    """Two local roots in one trace (a service called twice by an agent) are resolved apart."""
    app = App()
    for remote_span in (0x98, 0x99):
        remote = SpanContext(
            trace_id=0x1234,
            span_id=remote_span,
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        with trace.use_span(NonRecordingSpan(remote)):
            app.rag(f"q{remote_span}", f"a{remote_span}")
    assert [t.answer for t in app.processor.completed] == ["a152", "a153"]
    assert {t.trace_id for t in app.processor.completed} == {format(0x1234, "032x")}
    assert (app.assembler.late_spans, app.assembler.pending_spans) == (0, 0)


def test_retriever_without_answer_leaves_no_turn_and_no_error() -> None:
    """A root that ends without an output gives no turn; the trace is released."""
    app = App()
    with (
        app.span("rag", **{KIND: "CHAIN", "input.value": "q"}),
        app.span("retrieve", **{KIND: "RETRIEVER", "retrieval.documents.0.document.content": "d"}),
    ):
        pass
    assert app.processor.completed == []
    assert app.assembler.pending_traces == 0


def _record(trace: int, span: int, parent: int | None, **attributes: Any) -> SpanRecord:
    return SpanRecord(
        trace_id=format(trace, "032x"),
        span_id=format(span, "016x"),
        parent_span_id=format(parent, "016x") if parent is not None else None,
        name="s",
        start_time_ns=span,
        end_time_ns=span + 1,
        attributes=attributes,
    )


def test_pending_traces_are_bounded_and_evictions_counted() -> None:
    """Past `max_traces` the oldest unfinished trace is dropped and counted."""
    assembler = TurnAssembler(max_traces=2)
    for trace_number in (1, 2, 3):
        assembler.add(_record(trace_number, 10, 5))
    assert (assembler.pending_traces, assembler.evicted_traces, assembler.evicted_spans) == (
        2,
        1,
        1,
    )


def test_pending_spans_are_bounded() -> None:
    """Past `max_spans` whole traces are evicted, oldest first, until the bound holds."""
    assembler = TurnAssembler(max_spans=3)
    for span in (10, 11, 12):
        assembler.add(_record(1, span, 5))
    assembler.add(_record(2, 20, 5))
    assert (assembler.pending_spans, assembler.evicted_spans, assembler.evicted_traces) == (1, 3, 1)


def test_evicted_traces_can_be_resolved_instead_of_dropped() -> None:
    """With `resolve_evicted`, an evicted trace's finished turns come back from `add`."""
    assembler = TurnAssembler(max_traces=1, resolve_evicted=True)
    retriever = {KIND: "RETRIEVER", "retrieval.documents.0.document.content": "d"}
    assembler.add(_record(1, 11, 10, **retriever))
    assembler.add(_record(1, 10, 9, **{KIND: "CHAIN", "input.value": "q", "output.value": "a"}))
    (turn,) = assembler.add(_record(2, 20, 19))
    assert (turn.answer, assembler.evicted_traces, assembler.pending_traces) == ("a", 1, 1)


def test_dropped_traces_release_their_live_content() -> None:
    """Evicting a trace (default: drop) also frees the hidden text kept for its spans."""
    store = LiveContentStore()
    store.enabled = True
    assembler = TurnAssembler(max_traces=1, live_content=store)
    first = _record(1, 11, 10)
    store.put(first.key, LiveContent(input="secret"))
    assert assembler.add(first) == []
    assert assembler.add(_record(2, 20, 19)) == []
    assert (len(store), assembler.evicted_traces) == (0, 1)


def test_spans_ending_after_their_root_are_counted_not_kept() -> None:
    """A child ending after its trace's root was released is ignored and counted."""
    assembler = TurnAssembler()
    assembler.add(_record(1, 5, None))
    assert assembler.add(_record(1, 6, 5)) == []
    assert (assembler.late_spans, assembler.pending_traces) == (1, 0)


def test_flush_resolves_what_is_pending() -> None:
    """`flush` assembles traces whose local root never ended (e.g. at shutdown)."""
    assembler = TurnAssembler()
    assembler.add(
        _record(1, 11, 10, **{KIND: "RETRIEVER", "retrieval.documents.0.document.content": "d"})
    )
    assembler.add(_record(1, 10, 9, **{KIND: "CHAIN", "input.value": "q", "output.value": "a"}))
    assert assembler.add(_record(1, 12, 10, **{KIND: "LLM"})) == []
    (turn,) = assembler.flush()
    assert (turn.query, turn.answer, assembler.pending_traces) == ("q", "a", 0)


def test_live_content_is_released_with_the_trace() -> None:
    """Hidden text is used for the turn, then removed from the live store."""
    store = LiveContentStore()
    store.enabled = True
    app = App(TurnAssembler(live_content=store))
    with app.span("rag", **{KIND: "CHAIN"}) as root:
        with app.span(
            "retrieve", **{KIND: "RETRIEVER", "retrieval.documents.0.document.id": "k"}
        ) as r:
            store.put(
                (r.get_span_context().trace_id, r.get_span_context().span_id),
                LiveContent(documents=()),
            )
        with app.span("llm", **{KIND: "LLM"}):
            pass
        key = (root.get_span_context().trace_id, root.get_span_context().span_id)
        store.put(key, LiveContent(input="secret q", output="secret a"))
    (inline,) = app.processor.inline
    (turn,) = app.processor.completed
    assert inline == turn
    assert (turn.query, turn.answer, turn.contexts) == ("secret q", "secret a", ())
    assert len(store) == 0


def test_bad_limits_are_refused() -> None:
    """Limits below 1 fail at construction, naming the parameter."""
    with pytest.raises(ValueError, match="max_traces"):
        TurnAssembler(max_traces=0)
    with pytest.raises(ValueError, match="max_spans"):
        TurnAssembler(max_spans=-1)


def test_concurrent_traces_from_threads_all_complete() -> None:
    """Many threads running RAG turns at once each get their own complete turn."""
    app = App()

    def run(n: int) -> None:
        app.rag(f"q{n}", f"a{n}", doc=f"d{n}")

    threads = [threading.Thread(target=run, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    turns = app.processor.completed
    assert sorted(t.answer for t in turns) == sorted(f"a{n}" for n in range(16))
    assert all(t.context_texts == [f"d{t.answer[1:]}"] for t in turns)
    assert app.assembler.pending_traces == 0


def _live_run(instrumentor: Any, run: Any, *, track_starts: bool) -> AssemblingProcessor:
    """Run a real app under `instrumentor` with the assembling processor on its provider."""
    processor = AssemblingProcessor(TurnAssembler(), track_starts=track_starts)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    instrumentor.instrument(tracer_provider=provider)
    try:
        run()
    finally:
        instrumentor.uninstrument()
    return processor


@pytest.mark.parametrize("track_starts", [True, False])
def test_lcel_retrieval_step_is_never_an_inline_root(track_starts: bool) -> None:
    """In a real LCEL chain only the outer chain is inline-evaluated, with or without `start`."""
    from groundwire_langchain import LangChainInstrumentor
    from tests.test_assembly_langchain import rag_chain

    processor = _live_run(
        LangChainInstrumentor(),
        lambda: rag_chain(["Paris."]).invoke("What is the capital of France?"),
        track_starts=track_starts,
    )
    assert [t.answer for t in processor.inline] == ["Paris."]
    assert processor.inline == processor.completed


def test_openinference_llamaindex_inner_query_waits_for_the_public_query() -> None:
    """With `start`, LlamaIndex's nested `_query` span is not inline; the public `query` is."""
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    from tests.test_assembly_llamaindex import QUESTION, build_index, engine

    index = build_index()
    processor = _live_run(
        LlamaIndexInstrumentor(), lambda: engine(index).query(QUESTION), track_starts=True
    )
    (turn,) = processor.completed
    assert processor.inline == [turn]
    root = next(s for s in processor.ended if s.parent is None)
    assert turn.span_id == format(root.context.span_id, "016x")  # type: ignore[union-attr]


def test_a_root_answering_only_in_indexed_completions_is_found_live_as_offline() -> None:
    """An OpenLLMetry workflow span whose answer is only in `gen_ai.completion.{i}.*` (older
    releases) is a turn root for `turn_for` just as it is offline."""
    app = App()
    workflow = {"traceloop.span.kind": "workflow", "traceloop.entity.input": '"q"'}
    with app.span("rag.workflow", **workflow) as root:
        with app.span(
            "retrieve", **{KIND: "RETRIEVER", "retrieval.documents.0.document.content": "d"}
        ):
            pass
        root.set_attribute("gen_ai.completion.0.content", "the answer")
    assert [t.answer for t in app.processor.completed] == ["the answer"]
    assert app.processor.inline == app.processor.completed == turns_from_spans(app.processor.ended)
