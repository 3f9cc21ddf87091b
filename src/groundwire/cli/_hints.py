"""Library messages told in command-line terms.

The judges log `NOT_CONFIGURED_MESSAGE` once when an LLM-judge evaluator has no judge. Its
advice ends with "or pass judge=JudgeConfig(...)", which a Python caller can follow but a
command-line user cannot: the command line takes a judge from the environment only. The filter
below drops that clause from the record when the message is logged under a `groundwire` command.
"""

from __future__ import annotations

import logging
from typing import Final

from groundwire.judges import NOT_CONFIGURED_MESSAGE

__all__ = ["CLI_NOT_CONFIGURED", "install_hints"]

_PYTHON_ONLY: Final = ", or pass judge=JudgeConfig(...)"
CLI_NOT_CONFIGURED: Final = NOT_CONFIGURED_MESSAGE.replace(_PYTHON_ONLY, "")
"""The no-judge message as the command line shows it (the variables only)."""


class _CommandLineWording(logging.Filter):
    """Rewrites the no-judge record for a command-line user; lets every record through."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Replace the Python-only advice; never drop a record."""
        if record.msg == NOT_CONFIGURED_MESSAGE and not record.args:
            record.msg = CLI_NOT_CONFIGURED
        return True


_FILTER: Final = _CommandLineWording()


def install_hints() -> None:
    """Put the rewording on the judges' logger (once, however many commands run)."""
    logger = logging.getLogger("groundwire.judges")
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
