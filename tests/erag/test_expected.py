"""Gold answers joined onto recorded turns from JSON / JSONL files, by query or trace id."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundwire import RagTurn
from groundwire.evaluators.erag import attach_expected, load_expected

TRACE = "0af7651916cd43dd8448eb211c80319c"


def test_jsonl_by_query_joins_with_collapsed_whitespace(tmp_path: Path) -> None:
    """JSONL lines keyed by query attach to turns whose query differs only in spacing."""
    file = tmp_path / "gold.jsonl"
    file.write_text(
        '{"query": "When  was it built?", "expected": ["1889"]}\n\n'
        '{"query": "Who?", "answers": "Eiffel"}\n'
    )
    table = load_expected(file)
    assert table == {"When was it built?": ["1889"], "Who?": ["Eiffel"]}
    turns = [
        RagTurn(query="When was it built? ", contexts=["d"], answer="a"),
        RagTurn(query="Unknown", contexts=["d"], answer="a"),
    ]
    joined = list(attach_expected(turns, table))
    assert joined[0].expected == ("1889",)
    assert joined[1].expected is None


def test_json_by_trace_id(tmp_path: Path) -> None:
    """A JSON object keyed by trace id attaches by `turn.trace_id`."""
    file = tmp_path / "gold.json"
    file.write_text(f'{{"{TRACE}": ["Paris", "paris, france"]}}')
    turn = RagTurn(query="q", contexts=["d"], answer="a", trace_id=TRACE)
    (joined,) = attach_expected([turn], load_expected(file, by="trace_id"), by="trace_id")
    assert joined.expected == ("Paris", "paris, france")


def test_existing_answers_are_kept_unless_overwrite() -> None:
    """A turn that already has answers keeps them unless overwrite=True."""
    turn = RagTurn(query="q", contexts=["d"], answer="a", expected=["old"])
    assert next(attach_expected([turn], {"q": ["new"]})).expected == ("old",)
    assert next(attach_expected([turn], {"q": ["new"]}, overwrite=True)).expected == ("new",)


def test_bad_line_names_file_and_line(tmp_path: Path) -> None:
    """A malformed JSONL record fails naming the file and the line number."""
    file = tmp_path / "gold.jsonl"
    file.write_text('{"query": "a", "expected": ["x"]}\n{"query": "b", "expected": []}\n')
    with pytest.raises(ValueError, match=r"gold\.jsonl:2: expected answers must be"):
        load_expected(file)
    file.write_text('{"question": "a", "expected": ["x"]}\n')
    with pytest.raises(ValueError, match=r"gold\.jsonl:1: each line needs a string field 'query'"):
        load_expected(file)


def test_a_line_that_is_not_a_json_object_is_named(tmp_path: Path) -> None:
    """Gold answers name a line that is not JSON, or not an object, as calibrate's files do."""
    file = tmp_path / "gold.jsonl"
    file.write_text('{"query": "a", "expected": ["x"]}\n\n{"query": \n')
    with pytest.raises(ValueError, match=r"gold\.jsonl:3: not valid JSON \("):
        load_expected(file)
    file.write_text('["a", "x"]\n')
    with pytest.raises(ValueError, match=r"gold\.jsonl:1: expected a JSON object, got list$"):
        load_expected(file)
