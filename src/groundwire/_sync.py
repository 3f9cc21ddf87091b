"""Run a coroutine from sync code: the one bridge that `evaluate()`, judges and eRAG share.

`run_sync` runs one coroutine to completion; `sync_form` makes the sync twin of a public async
function from the async one itself, so the pair has one signature that cannot drift apart.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

__all__ = ["run_sync", "sync_form"]

T = TypeVar("T")
P = ParamSpec("P")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` to completion, even when this thread already runs an event loop (then on
    a fresh loop in a helper thread, since a running loop cannot be re-entered)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def sync_form(function: Callable[P, Coroutine[Any, Any, T]], doc: str) -> Callable[P, T]:
    """The sync twin of the async function `function` (named `a<name>`): `<name>`, taking the
    same arguments and running `function` to completion with `run_sync`, documented by `doc`.

    Written once instead of a second copy of every parameter: an option added to the async
    function is an option of the sync one too, with the same default.
    """

    @functools.wraps(function)
    def sync(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_sync(function(*args, **kwargs))

    name = function.__name__.removeprefix("a")
    sync.__name__ = name
    sync.__qualname__ = function.__qualname__.removesuffix(function.__name__) + name
    sync.__doc__ = doc
    return sync
