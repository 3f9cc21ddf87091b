"""Online evaluation: the span processor, the background runner and their configuration.

`groundwire.configure()` builds these for you; use them directly to wire online evaluation into
a tracer provider by hand (`provider.add_span_processor(EvaluationSpanProcessor(...))`).
"""

from __future__ import annotations

from groundwire.runner._background import BackgroundRunner
from groundwire.runner._budget import TokenBudget
from groundwire.runner._config import RunnerConfig, TurnFilter
from groundwire.runner._inline import inline_supported, write_scores
from groundwire.runner._jobs import InlineResult
from groundwire.runner._processor import EvaluationSpanProcessor
from groundwire.runner._sampling import trace_sampled
from groundwire.runner._stats import RunnerStats
from groundwire.runner._threads import background_thread_setup

__all__ = [
    "BackgroundRunner",
    "EvaluationSpanProcessor",
    "InlineResult",
    "RunnerConfig",
    "RunnerStats",
    "TokenBudget",
    "TurnFilter",
    "background_thread_setup",
    "inline_supported",
    "trace_sampled",
    "write_scores",
]
