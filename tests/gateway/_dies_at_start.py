"""A scoring child that dies before it reads its start arguments: importing this module in a
spawned child (as unpickling the child's `main` does, before its arguments) ends the process at
once with code 3. Imported in the test process it does nothing."""

from __future__ import annotations

import os
import sys
from typing import Any

if "--multiprocessing-fork" in sys.orig_argv:  # a spawned child, still reading its start
    os._exit(3)


def main(*_args: Any) -> None:
    """Never runs in a child (the import there ends it); the `main` the handle is given."""
