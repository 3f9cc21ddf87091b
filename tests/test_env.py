"""Environment variables: one strict parser per kind (configure() and the capture switches)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from groundwire._env import (
    env_flag,
    env_flag_or_list,
    env_float,
    env_int,
    env_json_options,
    env_list,
    env_rates,
    env_str,
)
from groundwire.capture import CaptureConfig


@pytest.mark.parametrize(
    ("raw", "expected"), [("true", True), ("ON", True), ("0", False), ("no", False)]
)
def test_privacy_flag_spellings(monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool) -> None:
    """The usual spellings of true and false switch a privacy flag."""
    monkeypatch.setenv("GROUNDWIRE_HIDE_INPUTS", raw)
    assert CaptureConfig.from_env().hide_inputs is expected


def test_misspelt_privacy_flag_is_an_error_not_false(monkeypatch: pytest.MonkeyPatch) -> None:
    """A typo in a privacy switch fails, naming the variable, instead of leaking text."""
    monkeypatch.setenv("GROUNDWIRE_HIDE_DOCUMENT_TEXT", "ture")
    with pytest.raises(ValueError, match="GROUNDWIRE_HIDE_DOCUMENT_TEXT"):
        CaptureConfig.from_env()


def test_negative_max_value_length_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A negative truncation length fails, naming the variable; 0 means no limit."""
    monkeypatch.setenv("GROUNDWIRE_MAX_VALUE_LENGTH", "-3")
    with pytest.raises(ValueError, match="GROUNDWIRE_MAX_VALUE_LENGTH"):
        CaptureConfig.from_env()
    monkeypatch.setenv("GROUNDWIRE_MAX_VALUE_LENGTH", "0")
    assert CaptureConfig.from_env().max_value_length is None


# --- the parsers themselves, one kind at a time (every GROUNDWIRE_* variable goes through one) ---

_VAR = "GROUNDWIRE_TEST_ONLY_VALUE"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Callable[[str | None], None]:
    """Set (a string) or unset (None) the test's variable."""

    def put(raw: str | None) -> None:
        if raw is None:
            monkeypatch.delenv(_VAR, raising=False)
        else:
            monkeypatch.setenv(_VAR, raw)

    return put


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_unset_or_blank_is_none_for_every_kind(
    env: Callable[[str | None], None], raw: str | None
) -> None:
    """Unset and blank mean the same: no value, so the option's default applies."""
    env(raw)
    parsers = (env_str, env_flag, env_int, env_list, env_float, env_rates, env_json_options)
    assert [parse(_VAR) for parse in parsers] == [None] * len(parsers)
    assert env_flag_or_list(_VAR) is None


def test_a_string_is_stripped(env: Callable[[str | None], None]) -> None:
    """Surrounding spaces are not part of a value."""
    env("  svc a \n")
    assert env_str(_VAR) == "svc a"


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", " Yes ", "on"])
def test_every_spelling_of_true(env: Callable[[str | None], None], raw: str) -> None:
    """Any case, surrounding spaces ignored."""
    env(raw)
    assert env_flag(_VAR) is True
    assert env_flag_or_list(_VAR) is True


@pytest.mark.parametrize("raw", ["0", "false", "False", "NO", "off"])
def test_every_spelling_of_false(env: Callable[[str | None], None], raw: str) -> None:
    """Any case; False, not None, so an explicit off wins over a default on."""
    env(raw)
    assert env_flag(_VAR) is False
    assert env_flag_or_list(_VAR) is False


def test_a_misspelt_flag_names_the_variable_the_spellings_and_the_value(
    env: Callable[[str | None], None],
) -> None:
    """The whole message, so a reader sees what to write instead."""
    env(" ture ")
    with pytest.raises(ValueError, match=r"must be one of") as raised:
        env_flag(_VAR)
    assert str(raised.value) == (
        f"{_VAR} must be one of true/false, 1/0, yes/no, on/off; got 'ture'"
    )


def test_a_flag_or_list_reads_anything_else_as_names(env: Callable[[str | None], None]) -> None:
    """`langchain, ,llama_index` is a list of two names (blank parts dropped)."""
    env("langchain, ,llama_index,")
    assert env_flag_or_list(_VAR) == ["langchain", "llama_index"]
    assert env_list(_VAR) == ["langchain", "llama_index"]


def test_whole_numbers_and_their_minimum(env: Callable[[str | None], None]) -> None:
    """The minimum itself is allowed; one below is refused naming variable, minimum and value;
    no minimum takes any whole number."""
    env(" 3 ")
    assert env_int(_VAR) == 3 and env_int(_VAR, minimum=3) == 3
    with pytest.raises(ValueError, match=r"must be at least") as raised:
        env_int(_VAR, minimum=4)
    assert str(raised.value) == f"{_VAR} must be at least 4, got 3"
    env("-7")
    assert env_int(_VAR) == -7
    env("2.5")
    with pytest.raises(ValueError, match=r"must be a whole number") as raised:
        env_int(_VAR)
    assert str(raised.value) == f"{_VAR} must be a whole number, got '2.5'"


def test_numbers(env: Callable[[str | None], None]) -> None:
    """Any float spelling; anything else refused naming variable and value."""
    env(" 0.25 ")
    assert env_float(_VAR) == 0.25
    env("1e-3")
    assert env_float(_VAR) == 0.001
    env("fast")
    with pytest.raises(ValueError, match=r"must be a number") as raised:
        env_float(_VAR)
    assert str(raised.value) == f"{_VAR} must be a number, got 'fast'"


def test_rates_by_name(env: Callable[[str | None], None]) -> None:
    """`name=rate` pairs, spaces and blank parts ignored, the last of a name wins."""
    env(" faithfulness = 0.5 ,, groundedness=1 , faithfulness=0.25")
    assert env_rates(_VAR) == {"faithfulness": 0.25, "groundedness": 1.0}


@pytest.mark.parametrize("raw", ["faithfulness", "faithfulness=high", "a=0.5,b", "a=b=0.5"])
def test_a_malformed_rate_names_the_variable_the_shape_and_the_value(
    env: Callable[[str | None], None], raw: str
) -> None:
    """A part without `=` or with a rate that is not a number."""
    env(raw)
    with pytest.raises(ValueError, match=r"must look like") as raised:
        env_rates(_VAR)
    assert str(raised.value) == f"{_VAR} must look like 'name=0.5,other=0.1', got {raw!r}"


def test_json_options_by_name(env: Callable[[str | None], None]) -> None:
    """An object of objects, read as it is."""
    env('{"quote_verification": {"cosine": "off"}, "erag": {}}')
    assert env_json_options(_VAR) == {"quote_verification": {"cosine": "off"}, "erag": {}}


@pytest.mark.parametrize(
    ("raw", "ending"),
    [
        ("{not json", "; it is not valid JSON ("),
        ('["a"]', ", got '[\"a\"]'"),
        ('{"a": 1}', ", got '{\"a\": 1}'"),
        ('{"a": {}, "b": []}', ', got \'{"a": {}, "b": []}\''),
    ],
)
def test_json_options_of_another_shape_are_refused_naming_the_variable(
    env: Callable[[str | None], None], raw: str, ending: str
) -> None:
    """Invalid JSON says so (with the parser's reason); valid JSON of another shape shows the
    value; both show the expected shape."""
    env(raw)
    with pytest.raises(ValueError, match=r"must be a JSON object") as raised:
        env_json_options(_VAR)
    shape = f'{_VAR} must be a JSON object of options by name, e.g. {{"name": {{"option": 1}}}}'
    assert str(raised.value).startswith(shape + ending)
