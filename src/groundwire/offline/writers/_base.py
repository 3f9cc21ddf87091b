"""The `ResultWriter` protocol every output format implements."""

from __future__ import annotations

from typing import Protocol

from groundwire.offline._results import TurnResult

__all__ = ["ResultWriter"]


class ResultWriter(Protocol):
    """Writes re-scored turns to one output file as they come."""

    def write(self, result: TurnResult) -> None:
        """Add one turn's result."""
        ...

    def close(self, *, interrupted: bool = False) -> None:
        """Finish the file so it is valid; `interrupted` when the run was cut short."""
        ...
