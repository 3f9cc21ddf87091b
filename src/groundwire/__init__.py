"""groundwire: RAG quality scores as OpenTelemetry telemetry, online and offline.

```python
import groundwire

turn = groundwire.RagTurn(query="Who wrote it?", contexts=["..."], answer='It says "..."')
scores = groundwire.evaluate(turn, ["quoted_spans", "quote_verification"])
```

Evaluators are found by name (`available_evaluators()`), or passed as instances of your own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from groundwire._evaluate import aevaluate_many, evaluate, evaluate_many
from groundwire._evaluator import AnyEvaluator, AsyncEvaluator, Evaluator
from groundwire._registry import (
    UnknownEvaluatorError,
    available_evaluators,
    get_evaluator,
    register_evaluator,
)
from groundwire._types import Context, RagTurn, Score
from groundwire._version import __version__
from groundwire.assembly import turns_from_spans

if TYPE_CHECKING:
    from groundwire._configure import configure, force_flush, shutdown

_LAZY = {"configure", "force_flush", "shutdown"}
"""Online-evaluation entry points, imported on first use so `import groundwire` stays light."""


def __getattr__(name: str) -> Any:
    """Import `configure` / `shutdown` / `force_flush` (and the OTel SDK) only when used."""
    if name in _LAZY:
        from groundwire import _configure

        return getattr(_configure, name)
    raise AttributeError(f"module 'groundwire' has no attribute {name!r}")


__all__ = [
    "AnyEvaluator",
    "AsyncEvaluator",
    "Context",
    "Evaluator",
    "RagTurn",
    "Score",
    "UnknownEvaluatorError",
    "__version__",
    "aevaluate_many",
    "available_evaluators",
    "configure",
    "evaluate",
    "evaluate_many",
    "force_flush",
    "get_evaluator",
    "register_evaluator",
    "shutdown",
    "turns_from_spans",
]
