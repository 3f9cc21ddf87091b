"""A user's mistake never shows a traceback: every command, many bad arguments, exit 2, one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from tests.offline._cli_files import write_turns

# Each case: (command line, with {t} the trace file, {d} the tmp folder; text the message shows).
CASES: list[tuple[str, str]] = [
    ("rescore {d}/nope.jsonl -e quoted_spans -o {d}/o.jsonl", "does not exist"),
    ("rescore {d}/empty -e quoted_spans -o {d}/o.jsonl", "/empty"),
    ("rescore {t} -o {d}/o.jsonl", "Missing option"),
    ("rescore {t} -e  -o {d}/o.jsonl", "at least one evaluator"),
    ("rescore {t} -e , -o {d}/o.jsonl", "at least one evaluator"),
    ("rescore {t} -e quoted_span -o {d}/o.jsonl", "did you mean 'quoted_spans'"),
    ("rescore {t} -e nope -o {d}/o.jsonl", "unknown evaluator 'nope'"),
    ("rescore {t} -e quoted_spans --options @{d}/missing.json -o {d}/o.jsonl", "cannot read"),
    ("rescore {t} -e quoted_spans --options {{bad -o {d}/o.jsonl", "not valid JSON"),
    ("rescore {t} -e quoted_spans --options [1] -o {d}/o.jsonl", "expected a JSON object"),
    (
        'rescore {t} -e quoted_spans --options {{"quoted_spans":{{"nope":1}}}} -o {d}/o.jsonl',
        "bad options for evaluator 'quoted_spans'",
    ),
    (
        'rescore {t} -e quoted_spans --options {{"quoted_spans":{{"min_lenn":2}}}} -o {d}/o.jsonl',
        "did you mean 'min_len'",
    ),
    (
        'rescore {t} -e quoted_spans --options {{"erag":{{}}}} -o {d}/o.jsonl',
        "evaluators not selected",
    ),
    ("rescore {t} -e quoted_spans -o {d}/o.txt", "cannot tell the output format"),
    ("rescore {t} -e quoted_spans -o {d}", "is a directory"),
    ("rescore {t} -e quoted_spans -o {t}/x.jsonl", "is not a directory"),
    ("rescore {t} -e quoted_spans -o {t}", "would destroy the input"),
    ("rescore {t} -e quoted_spans -o {d}/" + "a" * 300 + ".jsonl", "File name too long"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --format jeager", "did you mean 'jaeger'"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --engine spark", "not local or ray"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --format jaeger", "is OTLP/JSON (otlp-json)"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --workers 0", "Invalid value"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --export-otlp http://", "not an OTLP endpoint"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --export-otlp a:b:c", "not an OTLP endpoint"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --expected {d}/no.jsonl", "is not a file"),
    ("rescore {t} -e quoted_spans -o {d}/o.xlsx --resume", "--resume needs an output"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --no-such-flag", "No such option"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --annotate-phoenix", "need a phoenix:// input"),
    ("rescore {t} -e quoted_spans -o {d}/o.jsonl --phoenix-start 2026", "need a phoenix:// input"),
    ("serve --forward http://127.0.0.1:9 --log-level verbose", "'verbose' is not one of"),
    ("serve --forward http://127.0.0.1:9 --log-level verbose --print-config", "is not one of"),
    ("serve --log-level info --print-config", "downstream endpoint is required"),
    ("inspect", "Missing argument"),
    ("verify-quotes --quotes {d}/q.txt --docs {d}/none.txt --no-cosine", "does not exist"),
    ("verify-quotes --quotes {d}/missing.txt --docs {d}/doc.txt --no-cosine", "cannot read"),
    (
        "verify-quotes --quotes {d}/q.txt --docs {d}/doc.txt --no-cosine --trim-method x",
        "trim_method",
    ),
    ("verify-quotes --quotes {d}/q.txt --docs {d}/doc.txt --xlsx {d}/r.csv", "should end in"),
    ("verify-quotes --quotes {d}/q.txt --docs {d}/doc.txt --csv {t}/r.csv", "not a directory"),
    ("verify-quotes --quotes {d}/q.txt --docs {d}/doc.txt --csv {d}/q.txt", "--quotes file"),
    ("demo --questions 999 -o {d}/demo", "questions"),
    ("demo -o {t}", "is a file"),
    ("demo -n 0 -o {d}/demo", "greater than or equal to 1"),
    ("evaluators extra", "unexpected extra argument"),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A trace file, a quotes file and a document."""
    root = tmp_path_factory.mktemp("bad-args")
    write_turns(["q1"], root / "t.jsonl")
    (root / "q.txt").write_text("we shall fight\n")
    (root / "doc.txt").write_text("we shall fight on the beaches")
    (root / "empty").mkdir()
    return root


@pytest.mark.parametrize(("line", "message"), CASES, ids=[case[0][:60] for case in CASES])
def test_bad_argument_is_one_clear_message(folder: Path, line: str, message: str) -> None:
    """Exit 2 with a message naming the problem; no traceback, no bare "Aborted"."""
    args = [part.format(t=folder / "t.jsonl", d=folder) for part in line.split(" ")]
    args = [arg for arg in args if arg != ""] if "-e  -o" not in line else _empty_e(args)
    result = CliRunner().invoke(app, args)
    output = result.output
    assert result.exit_code == ExitCode.BAD_ARGUMENTS, output
    assert "Traceback" not in output and "Aborted" not in output
    assert message in " ".join(output.split()), output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], output  # one line, never a boxed panel
    assert "╭" not in output and "Usage:" not in output, output
    if "reading" not in output:  # rescore's progress line may stand before it
        assert len(output.strip().splitlines()) == 1, output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def _empty_e(args: list[str]) -> list[str]:
    """`-e ""`: the split leaves an empty string after -e; keep exactly that one."""
    index = args.index("-e")
    return [*args[: index + 1], "", *[arg for arg in args[index + 1 :] if arg != ""]]


def test_an_internal_error_is_one_line_never_aborted(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An EOFError escaping (Click would print a bare "Aborted!") is one line and exit 1."""
    from groundwire import _registry

    class Broken:
        @property
        def name(self) -> str:
            raise EOFError("stream ended")

        def evaluate(self, turn: object) -> None:
            """Never called."""

    monkeypatch.setitem(_registry._registered, "broken_name", Broken)  # put back after
    result = CliRunner().invoke(
        app,
        ["rescore", str(folder / "t.jsonl"), "-e", "broken_name", "-o", str(folder / "x.jsonl")],
    )
    assert result.exit_code == ExitCode.INTERNAL_ERROR
    assert "Aborted" not in result.output and "Traceback" not in result.output
    assert result.stderr.strip() == (
        "error: internal error (a bug in groundwire; please report it): EOFError: stream ended"
    )
