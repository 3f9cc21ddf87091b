"""`groundwire inspect`: the tree drawn per trace, the JSON document, the checks and exit codes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from typer.testing import CliRunner

from groundwire import Context, RagTurn
from groundwire.assembly import Origin, TraceReport, TurnReport
from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.cli._inspect import _preview, _tree, _where
from tests.offline._cli_files import write_spans_without_turns, write_turns

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"


def _text(report: TraceReport) -> list[str]:
    """The tree as plain lines."""
    console = Console(file=io.StringIO(), width=400, color_system=None)
    console.print(_tree(report), soft_wrap=True)
    return console.file.getvalue().splitlines()  # type: ignore[attr-defined]


def test_preview_is_one_line_of_at_most_80_characters() -> None:
    """White space folded; longer text cut to 79 characters and an ellipsis."""
    assert _preview(" a \n b\t c ") == "a b c"
    assert _preview("x" * 80) == "x" * 80
    assert _preview("x" * 81) == "x" * 79 + "…"


def test_where_names_the_origin_and_span() -> None:
    """`origin on span`, `?` without an origin, dimmed `not found` without a part."""
    assert _where(Origin("s", "Retriever [b]", "[i]: input.value")) == (
        "[cyan]\\[i]: input.value[/] on Retriever \\[b]"
    )
    assert _where(Origin("s", "chain", None)) == "[cyan]?[/] on chain"
    assert _where(None) == "[dim]not found[/]"


def _turn_report(**changes: Any) -> TurnReport:
    turn = RagTurn(
        query="what is " + "long " * 30,
        contexts=(Context(text="Paris is the capital.", rank=0), Context(text="[b]", rank=1)),
        answer="Paris.",
    )
    given: dict[str, Any] = {
        "root_id": "r1",
        "root_name": "chain",
        "turn": turn,
        "query": Origin("r1", "chain", "oi: input.value"),
        "answer": Origin("r1", "chain", "oi: output.value"),
        "contexts": [Origin("k1", "Retriever", "oi: documents", count=2)],
    }
    return TurnReport(**{**given, **changes})


def _report(**changes: Any) -> TraceReport:
    given: dict[str, Any] = {
        "trace_id": "t" * 32,
        "service": "rag-app",
        "spans": 5,
        "dialects": ["openinference", "genai"],
        "retrievals": [("k1", "Retriever", "openinference")],
        "turns": [_turn_report()],
        "reason": None,
    }
    return TraceReport(**{**given, **changes})


def test_a_trace_with_a_turn() -> None:
    """Header, retrieval spans, the turn with where each part was read, the contexts."""
    query = _preview("what is " + "long " * 30)
    assert _text(_report()) == [
        f"trace {'t' * 32} · rag-app · 5 spans · openinference, genai",
        "├── retrieval spans",
        "│   └── Retriever k1 (openinference)",
        "└── turn root chain r1",
        f"    ├── query    {query!r} ← oi: input.value on chain",
        "    ├── contexts 2",
        "    │   ├── 2 from oi: documents on Retriever",
        "    │   ├── 0 'Paris is the capital.'",
        "    │   └── 1 '[b]'",
        "    └── answer   'Paris.' ← oi: output.value on chain",
    ]


def test_a_trace_without_a_turn() -> None:
    """No service, no dialect, no retrieval, missing parents, a root without a turn, why."""
    report = _report(
        service=None,
        dialects=[],
        retrievals=[],
        missing_parents=["p1", "p2"],
        turns=[_turn_report(turn=None, reason="no answer", missing_parent=True)],
        reason="no retrieval",
    )
    assert _text(report) == [
        f"trace {'t' * 32} · unnamed service · 5 spans · no known dialect",
        "├── retrieval spans: none recognised",
        "├── missing parent spans (named by spans, never arrived): p1, p2",
        "├── turn root chain r1 (stand-in: its children made the turn): no turn (no answer)",
        "└── no turn: no retrieval",
    ]
    bare = _report(turns=[_turn_report(turn=None, reason=None)], retrievals=[])
    assert _text(bare)[-1] == "└── turn root chain r1: no turn (?)"


def test_a_stand_in_turn_says_so() -> None:
    """A turn rebuilt from the children of a root that never arrived is marked."""
    lines = _text(_report(turns=[_turn_report(missing_parent=True)]))
    assert "└── turn root chain r1 (stand-in: its children made the turn)" in lines


def _inspect(*args: str) -> Any:
    return CliRunner().invoke(app, ["inspect", *args], env={"COLUMNS": "400"})


def test_inspect_prints_each_trace_and_the_totals() -> None:
    """One tree per trace, then traces, spans and turns; exit 0."""
    result = _inspect(str(TRACES / "openinference_langgraph_agent.jsonl"))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("trace 4416719cb0748ba907a6875a10a21854 · rag-app · 16 spans")
    assert lines[-1] == "2 traces, 32 spans, 2 turns"


def test_inspect_json_is_one_document() -> None:
    """`--json`: traces, spans, turns, bad records and the no-turn reasons."""
    path = TRACES / "openinference_langgraph_agent.jsonl"
    document = json.loads(_inspect(str(path), "--json").stdout)
    assert (document["spans"], document["turns"], document["bad_records"]) == (32, 2, 0)
    assert document["no_turn"] == []
    assert [t["trace_id"] for t in document["traces"]] == [
        "4416719cb0748ba907a6875a10a21854",
        "3daa30ae997ae969f013867041b42bd6",
    ]
    assert "é" in json.dumps({"x": "é"}, ensure_ascii=False)


def test_inspect_one_trace() -> None:
    """`--trace ID` (any case, spaces trimmed) shows only that trace's spans."""
    path = TRACES / "openinference_langgraph_agent.jsonl"
    result = _inspect(str(path), "--trace", " 3DAA30AE997AE969F013867041B42BD6 ")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "1 traces, 16 spans, 1 turns"
    absent = _inspect(str(path), "--trace", "0" * 32)
    assert absent.exit_code == ExitCode.BAD_ARGUMENTS
    assert absent.stderr == f"error: no span of trace {'0' * 32} in {path}\n"


def test_inspect_refuses_bad_arguments(tmp_path: Path) -> None:
    """Not a file, an unknown format, a trace id that is not 32 hex digits: exit 2."""
    assert _inspect(str(tmp_path)).stderr == f"error: not a trace file: {tmp_path}\n"
    trace = write_turns(["q"], tmp_path / "t.jsonl")
    bad_format = _inspect(str(trace), "--format", "csv")
    assert bad_format.exit_code == ExitCode.BAD_ARGUMENTS
    assert bad_format.stderr.startswith("error: --format: expected one of otlp-json, ")
    for wrong in ("abc", "g" * 32, "a" * 31, "a" * 33):
        result = _inspect(str(trace), "--trace", wrong)
        assert result.exit_code == ExitCode.BAD_ARGUMENTS
        assert result.stderr == f"error: --trace: expected 32 hex digits, got {wrong!r}\n"
    assert _inspect(str(trace), "--trace", "A" * 32).exit_code == ExitCode.BAD_ARGUMENTS
    assert _inspect(str(trace), "--format", "otlp-json").exit_code == 0


def test_inspect_without_turns_says_why_and_exits_5(tmp_path: Path) -> None:
    """Spans but no turn: the reasons, exit 5 (0 with --allow-empty)."""
    path = write_spans_without_turns(tmp_path / "http.jsonl")
    result = _inspect(str(path))
    assert result.exit_code == ExitCode.NO_TURNS
    assert "no turn: " in result.stdout
    assert result.stdout.splitlines()[-2] == "4 traces, 4 spans, 0 turns"
    assert _inspect(str(path), "--allow-empty").exit_code == 0


def test_inspect_counts_bad_records_and_exits_3(tmp_path: Path) -> None:
    """A bad record is reported, counted in the totals, and makes exit 3."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    trace.write_text(trace.read_text() + "{not json\n")
    result = _inspect(str(trace))
    assert result.exit_code == ExitCode.PARTIAL_INPUT
    assert result.stdout.splitlines()[-1] == "1 traces, 3 spans, 1 turns, 1 bad records"
    assert "not valid JSON" in result.stderr
    document = json.loads(_inspect(str(trace), "--json").stdout)
    assert document["bad_records"] == 1


def test_inspect_of_an_unreadable_file_exits_4(tmp_path: Path) -> None:
    """Nothing readable (every record damaged): exit 4."""
    path = tmp_path / "bad.jsonl"
    path.write_text("{not json\n")
    result = _inspect(str(path))
    assert result.exit_code == ExitCode.NOTHING_READABLE
    zero = tmp_path / "zero.jsonl"
    zero.write_bytes(b"")
    assert _inspect(str(zero)).exit_code == ExitCode.NOTHING_READABLE


# --- survivors of the first mutation run -------------------------------------------------------


def test_every_turn_root_is_shown_after_one_without_a_turn() -> None:
    """A root that gave no turn does not hide the roots after it."""
    report = _report(
        turns=[_turn_report(turn=None, reason="no answer", root_id="r0"), _turn_report()]
    )
    lines = _text(report)
    assert "├── turn root chain r0: no turn (no answer)" in lines
    assert "└── turn root chain r1" in lines


def test_content_events_give_the_contexts() -> None:
    """Log records with content (GenAI events) feed the assembly, of the chosen trace only."""
    path = TRACES / "genai_events.jsonl"
    whole = _inspect(str(path))
    assert whole.exit_code == 0
    assert whole.stdout.count("contexts 2") == 2
    assert "0 'Paris is the capital of France.'" in whole.stdout
    one = _inspect(str(path), "--trace", "dc4eb7010d02d67d138d40beba65e73f")
    assert one.exit_code == 0
    assert one.stdout.count("contexts 2") == 1
    assert "0 'Madrid is the capital of Spain.'" in one.stdout
    assert "on chat small-model" in one.stdout


def test_the_format_given_is_the_one_read(tmp_path: Path) -> None:
    """`--format jaeger` reads the file as Jaeger JSON, not as what it looks like."""
    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    result = _inspect(str(trace), "--format", "jaeger")
    assert result.exit_code != 0
    assert "1 turns" not in result.stdout


def test_bad_records_are_notices_on_the_commands_console(tmp_path: Path, monkeypatch: Any) -> None:
    """A skipped record is told through the command's stderr console, not a bare print."""
    import groundwire.cli._console as console_module

    trace = write_turns(["q1"], tmp_path / "t.jsonl")
    trace.write_text(trace.read_text() + "{not json\n")
    buffer = io.StringIO()
    monkeypatch.setattr(console_module, "err_console", Console(file=buffer, width=300))
    result = _inspect(str(trace))
    assert result.exit_code == ExitCode.PARTIAL_INPUT
    assert "skipped: not valid JSON" in buffer.getvalue()
    assert "skipped: not valid JSON" not in result.stderr
