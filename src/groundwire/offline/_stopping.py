"""Stopping a `rescore` run gracefully: the stop flag, the signals that set it, and chunking.

A first Ctrl-C (SIGINT) or SIGTERM sets the `StopFlag`: the run stops after the chunks in flight,
leaving its output valid; a second raises KeyboardInterrupt (the CLI exits 130).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, Final

from groundwire._types import RagTurn

__all__ = ["StopFlag", "StopSignals", "chunks"]


class StopFlag:
    """Set by the first Ctrl-C (SIGINT) or SIGTERM: the run stops after the chunks in flight."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.input_exhausted = False
        """Set once every turn has been read: a stop after that changes nothing."""

    def set(self) -> None:
        """Ask the run to stop."""
        self._event.set()

    def is_set(self) -> bool:
        """True once a stop was asked for."""
        return self._event.is_set()


_STOP_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
"""Signals that stop a run gracefully (Ctrl-C; what `kill`, systemd and Kubernetes send)."""


class StopSignals:
    """First SIGINT or SIGTERM sets the stop flag; a second stops at once (KeyboardInterrupt)."""

    def __init__(self, stop: StopFlag) -> None:
        self._stop = stop
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for signum in _STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        """First signal: ask the run to stop; the next one raises KeyboardInterrupt."""
        self._stop.set()
        for stop_signal in _STOP_SIGNALS:
            signal.signal(stop_signal, _interrupt)

    def __exit__(self, *exc: object) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """A second stop signal: raise KeyboardInterrupt (the CLI exits 130)."""
    raise KeyboardInterrupt


def chunks(turns: Iterator[RagTurn], size: int, stop: StopFlag) -> Iterator[list[RagTurn]]:
    """Group turns into lists of `size`; stop early (dropping the partial chunk) once asked to."""
    chunk: list[RagTurn] = []
    for turn in turns:
        chunk.append(turn)
        if len(chunk) >= size:
            yield chunk
            chunk = []
        if stop.is_set():
            return
    stop.input_exhausted = True
    if chunk:
        yield chunk
