"""Helpers of the scoring child's tests (`gateway/_worker.py`): the protobuf request the intake
hands over, a scoring config, and running the child's main in the test process."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest
from tests.gateway._traces import request

from groundwire.gateway import GatewayConfig, load_config
from groundwire.gateway._signals import CONTENT_JSON, SIGNALS, decode


def protobuf_request(trace: list[dict[str, Any]]) -> bytes:
    """The protobuf encoding of an OTLP/JSON request of `trace` (what the intake hands over)."""
    return bytes(decode(SIGNALS["traces"], request(trace), CONTENT_JSON).SerializeToString())


def scoring_config(**flags: Any) -> GatewayConfig:
    """A gateway config scoring with quoted_spans, forwarding to a closed port."""
    return load_config(
        flags={
            "forward": "http://127.0.0.1:9",
            "evaluators": "quoted_spans",
            "quiet_period_s": 0.2,
            "metrics_interval_s": 60.0,
            **flags,
        },
        environ={},
    )


@contextlib.contextmanager
def as_the_child() -> Iterator[None]:
    """Run the child's main in this process: its signal dispositions and priority are put
    back afterwards (raising a priority back needs root, so the test is skipped without), and
    an `os._exit` (the orphan's way out) raises instead of ending this process with code 0,
    which would pass for success."""
    if os.geteuid() != 0:
        pytest.skip("the child lowers its priority; only root can raise this process's back")
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    nice = os.nice(0)
    exit_ = os._exit

    def tripwire(status: int) -> NoReturn:
        raise AssertionError(f"the child's main called os._exit({status}) in the test process")

    os._exit = tripwire
    try:
        yield
    finally:
        os._exit = exit_
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        os.nice(nice - os.nice(0))
