"""Step 1 of `rescore`: its options checked one by one before anything is opened or locked
(`check_inputs`), with the exact messages; folders expanded; the evaluators resolved; gold
answers loaded; OUT checked locally or staged for object storage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from groundwire.offline import ExpectedAnswers, OutputPathError
from groundwire.offline._rescore_inputs import RescoreOptions, check_inputs, print_notice
from groundwire.offline.readers import Problems, SpanBatch


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    """One (empty) trace file."""
    path = tmp_path / "traces.jsonl"
    path.write_text("")
    return path


def _no_spans(problems: Problems) -> list[SpanBatch]:
    return []


def _check(trace: Path | None, **options: Any) -> Any:
    options.setdefault("evaluators", ["quoted_spans"])
    options.setdefault("paths", [] if trace is None else [trace])
    return check_inputs(RescoreOptions(**options))


def test_the_plain_case_resolves_everything_and_opens_nothing(trace: Path) -> None:
    """One file, named evaluators, no OUT: the paths, the evaluators and stderr notices."""
    inputs = check_inputs(RescoreOptions(paths=trace, evaluators=["quoted_spans"]))
    assert inputs.paths == [trace] and inputs.names == ["quoted_spans"]
    assert (inputs.out, inputs.gold, inputs.remote) == (None, None, None)
    assert inputs.notice is print_notice
    text = check_inputs(RescoreOptions(paths=str(trace), evaluators=["quoted_spans"])).paths
    assert [Path(p) for p in text] == [trace]


def test_notices_go_to_stderr_with_the_programs_name(capsys: pytest.CaptureFixture[str]) -> None:
    """The default notice destination."""
    print_notice("skipped 2 files")
    assert capsys.readouterr().err == "groundwire: skipped 2 files\n"


def test_a_folder_is_expanded_and_what_it_passes_over_is_a_notice(tmp_path: Path) -> None:
    """Trace files under a folder are read; other files are reported to `on_problem`."""
    (tmp_path / "a.jsonl").write_text("")
    (tmp_path / "notes.txt").write_text("")
    seen: list[str] = []
    inputs = _check(None, paths=[tmp_path], on_problem=seen.append)
    assert [Path(p).name for p in inputs.paths] == ["a.jsonl"]
    assert len(seen) == 1 and "notes.txt" in seen[0]
    assert inputs.notice == seen.append
    glob = _check(None, paths=[tmp_path], glob="*.txt", on_problem=seen.append)
    assert [Path(p).name for p in glob.paths] == ["notes.txt"] and len(seen) == 1


def test_a_span_source_replaces_files_on_the_local_engine_only(trace: Path) -> None:
    """A source with files, or on Ray, is refused; alone it needs no file."""
    message = "^a span source is read instead of files, on the local engine only$"
    with pytest.raises(ValueError, match=message):
        _check(trace, source=_no_spans)
    with pytest.raises(ValueError, match=message):
        _check(None, source=_no_spans, engine="ray")
    inputs = _check(None, source=_no_spans, glob="*.never")
    assert inputs.paths == [] and inputs.names == ["quoted_spans"]


def test_nothing_to_read_is_refused() -> None:
    """No trace file and no span source."""
    with pytest.raises(ValueError, match=r"^rescore needs at least one trace file$"):
        _check(None)


def test_an_unknown_engine_is_refused(trace: Path) -> None:
    """Only local and ray."""
    assert _check(trace, engine="ray").names == ["quoted_spans"]
    with pytest.raises(ValueError, match=r"^engine must be 'local' or 'ray', got 'spark'$"):
        _check(trace, engine="spark")


@pytest.mark.parametrize("chunk_size", [0, -1, True, 1.0, "8"])
def test_a_bad_chunk_size_is_refused(trace: Path, chunk_size: object) -> None:
    """A whole number of at least 1 (not a bool)."""
    expected = f"chunk_size must be an int of at least 1, got {chunk_size!r}"
    with pytest.raises(ValueError) as raised:  # noqa: PT011 - the whole message is compared
        _check(trace, chunk_size=chunk_size)
    assert str(raised.value) == expected


def test_the_least_chunk_size_and_bad_workers(trace: Path) -> None:
    """chunk_size 1 is taken; workers are checked as the local engine checks them."""
    assert _check(trace, chunk_size=1).names == ["quoted_spans"]
    with pytest.raises(ValueError, match=r"^workers must be an int of at least 1, got 0$"):
        _check(trace, workers=0)
    with pytest.raises(ValueError, match=r"^workers > 1 builds the evaluators in each worker"):
        _check(trace, workers=2, evaluators=[lambda turn: None])


def test_a_local_out_is_checked_against_the_inputs_and_its_format(
    trace: Path, tmp_path: Path
) -> None:
    """OUT must have a known format and must not be a trace file or the gold answers file."""
    out = tmp_path / "scores.jsonl"
    inputs = _check(trace, out=str(out))
    assert inputs.out == out and inputs.remote is None
    with pytest.raises(ValueError, match="cannot tell the output format"):
        _check(trace, out=tmp_path / "scores.unknown")
    with pytest.raises(OutputPathError, match=r"^output .* is the trace file"):
        _check(trace, out=trace)
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query": "q", "answers": ["a"]}) + "\n")
    with pytest.raises(OutputPathError, match=r"^output .* is the --expected file"):
        _check(trace, out=gold, expected=gold)


def test_gold_answers_are_loaded_from_a_file_or_taken_as_given(trace: Path, tmp_path: Path) -> None:
    """A path is loaded (and checked against OUT); an ExpectedAnswers object is used as is."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"query": "q", "answers": ["a"]}) + "\n")
    loaded = _check(trace, expected=str(gold), out=tmp_path / "o.jsonl").gold
    assert isinstance(loaded, ExpectedAnswers) and len(loaded) == 1
    given = ExpectedAnswers.load(gold)
    assert _check(trace, expected=given).gold is given


def test_an_object_storage_out_is_staged_locally(trace: Path) -> None:
    """OUT in object storage: checked like a local one, written to a local stage."""
    inputs = _check(trace, out="s3://bucket/runs/scores.jsonl", resume=True)
    try:
        assert inputs.remote is not None and inputs.remote.url == "s3://bucket/runs/scores.jsonl"
        assert inputs.remote.append is True
        assert inputs.out == inputs.remote.local and inputs.out.name == "scores.jsonl"
    finally:
        if inputs.remote is not None:
            shutil.rmtree(inputs.remote.folder)
    with pytest.raises(ValueError, match="cannot tell the output format"):
        _check(trace, out="s3://bucket/runs/scores.unknown")
