"""`rescore`'s argument checks, each on its own: evaluator names and options, the export
endpoint, input and output paths, the baseline. Each problem is one `CliError` (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundwire import _registry
from groundwire._registry import available_evaluators
from groundwire.cli._errors import CliError
from groundwire.cli._exit import ExitCode
from groundwire.cli._rescore_args import (
    check_paths,
    comparison,
    endpoint,
    evaluator_names,
    evaluator_options,
    evaluators,
)


def _refused(call: object, *args: object) -> str:
    """The message of the bad-argument error `call(*args)` raises."""
    with pytest.raises(CliError) as caught:
        call(*args)  # type: ignore[operator]
    assert caught.value.code is ExitCode.BAD_ARGUMENTS
    return str(caught.value)


def test_evaluator_names_split_commas_and_drop_blanks() -> None:
    """Repeated and comma-separated values, stripped, empty names dropped."""
    assert evaluator_names([" a , b", ",", "c,,", "  "]) == ["a", "b", "c"]
    assert evaluator_names([]) == []


def test_evaluator_options_inline_and_from_a_file(tmp_path: Path) -> None:
    """JSON inline or `@FILE` (UTF-8); none given is no options."""
    assert evaluator_options(None) == {}
    assert evaluator_options('{"quoted_spans": {"min_len": 2}}') == {"quoted_spans": {"min_len": 2}}
    path = tmp_path / "o.json"
    path.write_text('{"quoted_spans": {"casefold": false, "é": {}}}', encoding="utf-8")
    assert evaluator_options(f"@{path}") == {"quoted_spans": {"casefold": False, "é": {}}}


def test_evaluator_options_refuse_what_is_not_an_object_of_objects(tmp_path: Path) -> None:
    """An unreadable file, bad JSON, a list or a non-object value: one line each."""
    missing = tmp_path / "missing.json"
    assert _refused(evaluator_options, f"@{missing}") == (
        f"--options: cannot read {str(missing)!r}: No such file or directory"
    )
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"\xe9": {}}')
    assert _refused(evaluator_options, f"@{latin}").startswith(
        f"--options: cannot read {str(latin)!r}: 'utf-8' codec can't decode"
    )
    assert _refused(evaluator_options, "{bad").startswith("--options: not valid JSON: Expecting")
    expected = (
        "--options: expected a JSON object of evaluator name -> options, e.g. "
        '\'{"quote_verification": {"embedder": null}}\''
    )
    assert _refused(evaluator_options, "[1]") == expected
    assert _refused(evaluator_options, '{"a": {}, "b": 1}') == expected


def test_evaluators_are_built_once_by_name() -> None:
    """Known names with their options become evaluators, in the order given."""
    built = evaluators(["quoted_spans", "quote_verification"], {"quoted_spans": {"min_len": 2}})
    assert [type(e).__name__ for e in built] == ["QuotedSpans", "QuoteVerification"]


def test_evaluators_refuse_no_name_and_unknown_names() -> None:
    """No name, or a name not registered (with the nearest known one and the list)."""
    assert _refused(evaluators, [], {}) == (
        "--evaluators: give at least one evaluator name (groundwire evaluators lists them)"
    )
    assert _refused(evaluators, ["quoted_spans", "groundednes"], {}) == (
        "--evaluators: unknown evaluator 'groundednes' (did you mean 'groundedness'?); known: "
        + ", ".join(available_evaluators())
    )
    assert "citation_support, erag, groundedness" in ", ".join(available_evaluators())


def test_evaluators_refuse_options_for_evaluators_not_selected() -> None:
    """Options naming evaluators that were not chosen are a mistake, listed sorted."""
    message = _refused(evaluators, ["quoted_spans"], {"zeta": {}, "erag": {}, "quoted_spans": {}})
    assert message == "--options: options given for evaluators not selected: ['erag', 'zeta']"


def test_a_misspelt_keyword_gets_the_nearest_and_the_accepted_ones() -> None:
    """TypeError for an unknown keyword: the nearest accepted keyword and all of them."""
    message = _refused(evaluators, ["quoted_spans"], {"quoted_spans": {"min_lenn": 2}})
    # Python names the constructor in its TypeError; under mutmut that is the trampoline's
    # copy of it (the rest of the message is ours, and must be as it is).
    message = message.replace("xǁQuotedSpansǁ__init____mutmut_orig", "__init__")
    assert message == (
        "--options: bad options for evaluator 'quoted_spans': QuotedSpans.__init__() got an "
        "unexpected keyword argument 'min_lenn' (did you mean 'min_len'?); accepted: casefold, "
        "min_len, quote_style, normalize_unicode"
    )


def test_keyword_only_options_are_listed_before_positional_ones() -> None:
    """An evaluator with a positional parameter lists its keyword-only ones first."""
    message = _refused(evaluators, ["erag"], {"erag": {"modl": "m"}})
    assert message.endswith(
        "(did you mean 'model'?); accepted: model, metric, retrieval_metrics, primary, "
        "max_concurrency, name, generator"
    )


def test_a_type_error_without_a_keyword_has_no_hint() -> None:
    """A wrong type is said as the evaluator says it, with no keyword hint."""
    message = _refused(evaluators, ["quoted_spans"], {"quoted_spans": {"min_len": "x"}})
    assert message == (
        "--options: bad options for evaluator 'quoted_spans': quoted_spans: min_len must be an "
        "int, got str"
    )


def test_a_bad_option_value_names_the_evaluator() -> None:
    """A ValueError from the evaluator is a bad argument naming it."""
    message = _refused(evaluators, ["quoted_spans"], {"quoted_spans": {"min_len": -1}})
    assert message == "evaluator 'quoted_spans': quoted_spans: min_len must be >= 0, got -1"


@pytest.mark.parametrize(
    "value",
    [
        "http://collector:4318",
        "https://collector",
        "http://collector:4318/v1/traces",
        "collector:4317",
        "grpc://collector:4317",
        "grpc://collector:4317/",
    ],
)
def test_endpoints_accepted(value: str) -> None:
    """http(s) with or without a port and path; gRPC as host:port."""
    assert endpoint(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "http://",
        "ftp://collector:21",
        "collector",
        "grpc://collector",
        "grpc://collector:4317/v1",
        "a:b:c",
        "http://collector:99999",
        "http://collector:port",
    ],
)
def test_endpoints_refused(value: str) -> None:
    """No host, another scheme, gRPC without a port or with a path, a bad port."""
    assert _refused(endpoint, value) == (
        f"--export-otlp: {value!r} is not an OTLP endpoint; expected http(s)://host[:port] "
        "(OTLP/HTTP) or host:port (gRPC)"
    )


def test_check_paths_accepts_existing_inputs_and_a_new_output(tmp_path: Path) -> None:
    """Existing trace files, an expected file and a baseline; OUT new with a known suffix."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    expected = tmp_path / "e.jsonl"
    expected.write_text("")
    check_paths([trace, tmp_path], expected, tmp_path / "out.csv", tmp_path / "b.jsonl")


def test_check_paths_skips_urls(tmp_path: Path) -> None:
    """phoenix:// and object-storage inputs are not files to look for; OUT may be a URL."""
    check_paths(
        [Path("phoenix://host:6006/p"), Path("s3://bucket/t.jsonl")], None, Path("s3://b/o.jsonl")
    )


def test_check_paths_refuses_missing_inputs(tmp_path: Path) -> None:
    """A trace file or an --expected file that is not there."""
    missing = tmp_path / "no.jsonl"
    assert _refused(check_paths, [missing], None, tmp_path / "o.jsonl") == (
        f"trace file {missing} does not exist"
    )
    assert _refused(check_paths, [Path("s3:/b/t.jsonl"), missing], None, tmp_path / "o.jsonl") == (
        f"trace file {missing} does not exist"
    )
    assert _refused(check_paths, [], tmp_path, tmp_path / "o.jsonl") == (
        f"--expected: {tmp_path} is not a file"
    )


def test_check_paths_refuses_an_output_that_is_an_input(tmp_path: Path) -> None:
    """OUT may be neither the --expected file nor the baseline, and needs a known suffix."""
    expected = tmp_path / "e.jsonl"
    expected.write_text("")
    baseline = tmp_path / "b.jsonl"
    baseline.write_text("")
    assert _refused(check_paths, [], expected, expected).startswith(
        f"--out {expected} is the --expected file {expected}: writing it would destroy"
    )
    assert _refused(check_paths, [], None, baseline, baseline).startswith(
        f"--out {baseline} is the --baseline file {baseline}: writing it would destroy"
    )
    assert _refused(check_paths, [], None, tmp_path / "o.txt").startswith(
        "cannot tell the output format of"
    )
    assert _refused(check_paths, [], None, Path("s3://b/o.txt")).startswith(
        "cannot tell the output format of"
    )


def test_comparison_loads_the_baseline_for_the_evaluators(tmp_path: Path) -> None:
    """None without a baseline; a Comparison over the named evaluators with one."""
    assert comparison(None, ["quoted_spans"], phoenix=True) is None
    path = tmp_path / "b.jsonl"
    row = {"trace_id": "a" * 32, "span_id": "b" * 16, "query": "q", "scores": {}}
    path.write_text(json.dumps(row) + "\n")
    compared = comparison(path, ["quoted_spans"], phoenix=False)
    assert compared is not None
    assert list(compared.shifts) == ["quoted_spans"]
    assert compared.baseline.path == str(path)


def test_comparison_refuses_phoenix_a_missing_file_and_a_bad_one(tmp_path: Path) -> None:
    """Not with phoenix://; the file must exist and be a scores file."""
    path = tmp_path / "b.jsonl"
    path.write_text("")
    assert _refused(comparison, path, [], True) == (
        "--baseline: not available with a phoenix:// input (re-score a file)"
    )
    assert _refused(comparison, tmp_path / "no.jsonl", [], False) == (
        f"--baseline: {tmp_path / 'no.jsonl'} is not a file"
    )
    bad = tmp_path / "b.txt"
    bad.write_text("x")
    assert _refused(comparison, bad, [], False) == (
        f"--baseline: {bad}: a baseline must be a .jsonl or .csv scores file written by rescore"
    )


def test_an_evaluator_that_cannot_be_used_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ImportError while building (a missing extra) names the evaluator and the reason."""

    def needs_an_extra() -> object:
        raise ImportError("install groundwire[extra]")

    monkeypatch.setitem(_registry._registered, "cli_test_needs_extra", needs_an_extra)
    assert _refused(evaluators, ["cli_test_needs_extra"], {}) == (
        "evaluator 'cli_test_needs_extra' cannot be used: install groundwire[extra]"
    )


def test_a_run_time_evaluator_gets_no_keyword_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hint reads plug-ins' signatures; one registered at run time is told without it."""

    def factory(*, alpha: int = 1) -> object:
        raise AssertionError("never built")

    monkeypatch.setitem(_registry._registered, "cli_test_run_time", factory)
    message = _refused(evaluators, ["cli_test_run_time"], {"cli_test_run_time": {"alpah": 1}})
    assert message == (
        "--options: bad options for evaluator 'cli_test_run_time': "
        "test_a_run_time_evaluator_gets_no_keyword_hint.<locals>.factory() got an unexpected "
        "keyword argument 'alpah'"
    )


def test_check_paths_refuses_an_output_that_is_a_trace_file(tmp_path: Path) -> None:
    """OUT named like an input trace file would destroy it."""
    trace = tmp_path / "t.jsonl"
    trace.write_text("")
    assert _refused(check_paths, [trace], None, trace).startswith(
        f"--out {trace} is the trace file {trace}: writing it would destroy"
    )
