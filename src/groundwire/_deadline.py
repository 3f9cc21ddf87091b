"""Calls that cannot take a timeout, run where they can be abandoned at a deadline.

`TracerProvider.shutdown()` takes no timeout, and an OTLP exporter inside it may wait through
its retry series; `run_until(calls, deadline)` starts each call on its own daemon thread, all at
once, and waits for them until `deadline` (a `time.monotonic()` value). A call still running
then is abandoned: it goes on in the background (a daemon thread never holds the interpreter's
exit) and the caller gets False. A call that raises is logged and counts as not done.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["Outcome", "run_until"]

logger = logging.getLogger("groundwire")


@dataclass(slots=True)
class Outcome:
    """What became of one call."""

    name: str
    done: bool = False
    """The call returned before the deadline."""
    result: object = None
    failed: bool = False
    """The call raised."""
    _finished: threading.Event = field(default_factory=threading.Event)

    @property
    def ok(self) -> bool:
        """Done, did not raise, and did not return False."""
        return self.done and not self.failed and self.result is not False


def run_until(calls: Sequence[tuple[str, Callable[[], object]]], deadline: float) -> list[Outcome]:
    """Run every `(name, call)` at once on daemon threads; wait for them until `deadline`."""
    outcomes: list[Outcome] = []
    for name, call in calls:
        outcome = Outcome(name)

        def target(call: Callable[[], object] = call, outcome: Outcome = outcome) -> None:
            """Run the call, keeping its result or its failure."""
            try:
                outcome.result = call()
            except Exception:
                outcome.failed = True
                logger.warning("%s failed", outcome.name, exc_info=True)
            finally:
                outcome._finished.set()

        thread = threading.Thread(target=target, name=f"groundwire-{name}", daemon=True)
        thread.start()
        outcomes.append(outcome)
    for outcome in outcomes:
        outcome.done = outcome._finished.wait(max(0.0, deadline - time.monotonic()))
    return outcomes
