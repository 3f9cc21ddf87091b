"""Built-in evaluators and their batch functions.

Names are imported lazily (on first attribute access) so that `import groundwire` stays light:
the judge, eRAG and embedding dependencies load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    # public name -> module that defines it
    "Quote": "groundwire.evaluators.quoted_spans",
    "QuotedSpans": "groundwire.evaluators.quoted_spans",
    "find_quotes": "groundwire.evaluators.quoted_spans",
    "quoted_spans_alignment": "groundwire.evaluators.quoted_spans",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'groundwire.evaluators' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
