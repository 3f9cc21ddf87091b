"""Environment variables: one strict parser per kind (configure() and the capture switches)."""

from __future__ import annotations

import pytest

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
