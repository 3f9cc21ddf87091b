"""`sync_form`: the sync twin of an async function has its signature and runs it anywhere."""

from __future__ import annotations

import asyncio
import inspect

from groundwire._sync import sync_form
from groundwire.judges import aaudit_citation, audit_citation


async def ascale(value: int, *, factor: int = 2) -> int:
    """Multiply `value` by `factor`, after yielding to the loop once."""
    await asyncio.sleep(0)
    return value * factor


scale = sync_form(ascale, "Multiply `value` by `factor` (sync form of `ascale`).")


def test_the_sync_twin_has_the_async_signature_its_own_name_and_doc() -> None:
    """Same parameters and defaults as the async function; named without the `a`."""
    assert inspect.signature(scale) == inspect.signature(ascale)
    assert (scale.__name__, scale.__qualname__) == ("scale", "scale")
    assert scale.__doc__ == "Multiply `value` by `factor` (sync form of `ascale`)."
    assert inspect.signature(audit_citation) == inspect.signature(aaudit_citation)
    assert audit_citation.__name__ == "audit_citation"


def test_the_sync_twin_runs_outside_and_inside_a_running_event_loop() -> None:
    """From plain code and from a coroutine's thread (where asyncio.run would refuse)."""
    assert scale(3) == 6
    assert scale(3, factor=5) == 15

    async def inside() -> int:
        return scale(4)

    assert asyncio.run(inside()) == 8
