"""What switches zero-code scoring on, and how a pre-fork server's master is recognised."""

from __future__ import annotations

import pytest

from groundwire.autoconfigure import (
    is_multiprocessing_helper,
    is_prefork_master,
    is_spawning_supervisor,
    wanted,
)


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


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (["/srv/.venv/bin/uvicorn", "--workers", "2", "app:app"], {}, True),
        (["python", "-m", "uvicorn", "app:app", "--workers=4"], {}, True),
        (["/srv/.venv/bin/uvicorn", "app:app", "--reload"], {}, True),
        (["/srv/.venv/bin/uvicorn", "app:app"], {"WEB_CONCURRENCY": "3"}, True),
        (["/srv/.venv/bin/uvicorn", "app:app", "--workers", "1"], {"WEB_CONCURRENCY": "3"}, False),
        (["/srv/.venv/bin/uvicorn", "app:app"], {}, False),
        (["/srv/.venv/bin/uvicorn", "app:app", "--workers", "many"], {}, False),
        (["python", "-c", "from multiprocessing.spawn import spawn_main"], {}, False),
        (["/srv/.venv/bin/gunicorn", "--workers", "2", "app:app"], {}, False),
    ],
)
def test_a_uvicorn_supervisor_is_recognised_by_its_workers_or_reload(
    argv: list[str], environ: dict[str, str], expected: bool
) -> None:
    """More than one worker (option, else WEB_CONCURRENCY) or --reload; a spawned worker is not."""
    assert is_spawning_supervisor(argv, environ) is expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["python", "-B", "-c", "from multiprocessing.resource_tracker import main;main(6)"], True),
        (["python", "-c", "from multiprocessing.forkserver import main; main(3, 4)"], True),
        (
            ["python", "-B", "-c", "from multiprocessing.spawn import spawn_main; spawn_main()"],
            False,
        ),
        (["python", "app.py", "-c", "x"], False),
    ],
)
def test_multiprocessing_helpers_are_recognised(argv: list[str], expected: bool) -> None:
    """The resource tracker and the fork server serve no turns; a spawned worker does."""
    assert is_multiprocessing_helper(argv) is expected
