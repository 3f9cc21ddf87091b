"""What switches zero-code scoring on, and how a pre-fork server's master is recognised."""

from __future__ import annotations

import pytest

from groundwire.autoconfigure import is_prefork_master, wanted


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({}, False),
        ({"GROUNDWIRE_EVALUATORS": "quoted_spans"}, True),
        ({"GROUNDWIRE_EVALUATORS": " , "}, False),
        ({"GROUNDWIRE_ENABLED": "true"}, True),
        ({"GROUNDWIRE_ENABLED": "false", "GROUNDWIRE_EVALUATORS": "quoted_spans"}, False),
        ({"GROUNDWIRE_ENABLED": "off"}, False),
    ],
)
def test_scoring_is_wanted_when_the_variables_say_so(
    monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], expected: bool
) -> None:
    """GROUNDWIRE_ENABLED decides when set; otherwise GROUNDWIRE_EVALUATORS naming anything."""
    monkeypatch.delenv("GROUNDWIRE_ENABLED", raising=False)
    monkeypatch.delenv("GROUNDWIRE_EVALUATORS", raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert wanted() is expected


def test_a_bad_switch_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """GROUNDWIRE_ENABLED=maybe is a ValueError naming the variable and the value."""
    monkeypatch.setenv("GROUNDWIRE_ENABLED", "maybe")
    with pytest.raises(ValueError, match=r"GROUNDWIRE_ENABLED must be one of .* got 'maybe'"):
        wanted()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/srv/.venv/bin/gunicorn", "-w", "2", "app:app"], True),
        (["/usr/bin/python3", "-m", "gunicorn", "app:app"], True),
        (["python", "/srv/.venv/bin/gunicorn", "app:app"], True),
        (["python", "app.py"], False),
        (["python", "-m", "uvicorn", "app:app"], False),
        (["python", "serve.py", "gunicorn"], False),
        ([], False),
    ],
)
def test_a_gunicorn_master_is_recognised_by_its_command_line(
    argv: list[str], expected: bool
) -> None:
    """gunicorn by its script or as `-m gunicorn`; an argument merely named gunicorn is not."""
    assert is_prefork_master(argv) is expected
