"""groundwire: RAG quality scores as OpenTelemetry telemetry, online and offline.

```python
import groundwire

turn = groundwire.RagTurn(query="Who wrote it?", contexts=["..."], answer='It says "..."')
scores = groundwire.evaluate(turn, ["quoted_spans", "quote_verification"])
```

Evaluators are found by name (`available_evaluators()`), or passed as instances of your own.
"""

from __future__ import annotations

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
    "evaluate",
    "evaluate_many",
    "get_evaluator",
    "register_evaluator",
]
