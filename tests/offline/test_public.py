"""The public surface of groundwire.offline and its readers and writers packages."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "module", ["groundwire.offline", "groundwire.offline.readers", "groundwire.offline.writers"]
)
def test_all_names_exist_and_are_unique(module: str) -> None:
    """Every name in __all__ is defined, once."""
    imported = importlib.import_module(module)
    assert len(set(imported.__all__)) == len(imported.__all__)
    for name in imported.__all__:
        assert getattr(imported, name) is not None


def test_rescore_is_reachable_as_documented() -> None:
    """`groundwire.offline.rescore` is the function docs/offline.md describes."""
    from groundwire.offline import rescore
    from groundwire.offline.rescore import rescore as defined

    assert rescore is defined
    assert list(rescore.__code__.co_varnames[:3]) == ["paths", "evaluators", "out"]
