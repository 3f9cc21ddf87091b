"""The handle `configure()` returns: what it set up, its stats, and its flush and shutdown.

`OnlineEvaluation.shutdown` drains the runner, uninstruments, and flushes and shuts every
telemetry provider within one deadline (`ProviderHandle`s run in parallel, abandoned when the
deadline passes), then says once what was left behind.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundwire._breaker import CLOSED
from groundwire._deadline import run_until
from groundwire._settings import DEFAULT_EXIT_TIMEOUT_S, seconds
from groundwire._switch import SwitchInterval
from groundwire.capture import LIVE_CONTENT
from groundwire.emit import Emitter
from groundwire.exporters import ExportGuard
from groundwire.runner import BackgroundRunner, EvaluationSpanProcessor, RunnerStats

__all__ = ["DEADLINE_SLACK_S", "OnlineEvaluation", "OnlineStats", "ProviderHandle"]

logger = logging.getLogger("groundwire")

DEADLINE_SLACK_S = 0.25
"""What `shutdown(timeout_s)` / `force_flush(timeout_s)` may take beyond `timeout_s`: starting and
joining threads, assembling spans still in the hand-off queue, uninstrumenting."""
_EXPORT_SHARE = 0.25
"""Share of a shutdown budget (at most `_EXPORT_RESERVE_MAX_S`) kept for exporting at the end."""
_EXPORT_RESERVE_MAX_S = 2.0


@dataclass(frozen=True, slots=True)
class ProviderHandle:
    """One telemetry provider that shutdown and force_flush flush (and shut, when groundwire
    built it) within what is left of their deadline. Each call gets the seconds left."""

    name: str
    flush: Callable[[float], object] | None
    close: Callable[[float], object] | None


@dataclass(frozen=True, slots=True)
class OnlineStats(RunnerStats):
    """`RunnerStats` plus what `configure()` set up and what became of the telemetry."""

    evaluators: tuple[str, ...] = ()
    instrumented: tuple[str, ...] = ()
    """Integrations `configure()` instrumented (empty: spans must come from elsewhere)."""
    exporter: str = ""
    """Where groundwire's own providers send telemetry (or the app's providers)."""
    spans_not_exported: int = 0
    """Spans given to groundwire's OTLP exporter that have not reached the endpoint."""
    unreachable: tuple[str, ...] = ()
    """Endpoints whose circuit breaker is open right now."""


@dataclass
class OnlineEvaluation:
    """What `configure()` set up; `groundwire.shutdown()` undoes it."""

    runner: BackgroundRunner
    processor: EvaluationSpanProcessor
    emitter: Emitter
    tracer_provider: Any
    meter_provider: Any
    owns_tracer_provider: bool
    owns_meter_provider: bool
    output_path: Path | None = None
    """The OTLP/JSON-lines file, when no OTLP endpoint was configured."""
    logger_provider: Any = None
    """Where log-based result events go (None with `events="span"` and no app provider)."""
    owns_logger_provider: bool = False
    instrumented: list[str] = field(default_factory=list)
    """Names of the integrations `configure()` instrumented."""
    exit_timeout_s: float = DEFAULT_EXIT_TIMEOUT_S
    """The exit hook's deadline."""
    providers: list[ProviderHandle] = field(default_factory=list)
    """Flushed and shut, in parallel, with what is left of a deadline (see `ProviderHandle`)."""
    guards: list[ExportGuard] = field(default_factory=list)
    """The breakers and counts of groundwire's own OTLP exporters."""
    exporter: str = ""
    _instrumentors: list[tuple[str, Any]] = field(default_factory=list)
    _prometheus_server: Any = None
    _closed: bool = False
    _froze_gc: bool = False
    _switch: SwitchInterval | None = None
    """The thread switch interval `configure()` set, restored by `shutdown()`."""

    @property
    def prometheus_url(self) -> str | None:
        """The scrape URL of the Prometheus endpoint, when one was asked for."""
        server = self._prometheus_server
        if server is None:
            return None
        host, port = server.server_address[:2]
        return f"http://{host}:{port}/metrics"

    def stats(self) -> OnlineStats:
        """Turn counts (submitted, scored, errored, dropped, sampled out, in flight), plus the
        evaluators, the instrumented integrations, the exporter and unexported spans."""
        turns = self.runner.stats()
        return OnlineStats(
            **{name: getattr(turns, name) for name in RunnerStats.__dataclass_fields__},
            evaluators=tuple(e.name for e in self.runner.config.evaluators),
            instrumented=tuple(self.instrumented),
            exporter=self.exporter,
            spans_not_exported=self._spans_not_exported(),
            unreachable=tuple(g.name for g in self.guards if g.breaker.state != CLOSED),
        )

    def _spans_not_exported(self) -> int:
        """Spans handed to groundwire's OTLP span exporter that have not reached the endpoint."""
        return sum(guard.unsent() for guard in self.guards if guard.kind == "spans")

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Finish queued evaluations, then flush the providers; False if the deadline passed.

        Returns within `timeout_s` + `DEADLINE_SLACK_S`, whatever the exporters do.
        """
        timeout_s = seconds("timeout_s", timeout_s)
        deadline = time.monotonic() + timeout_s
        self.processor.drain()
        ok = self.runner.force_flush(max(0.0, timeout_s - _export_reserve(timeout_s)))
        calls = [(f"flush {p.name}", _bind(p.flush, deadline)) for p in self.providers if p.flush]
        return all(outcome.ok for outcome in run_until(calls, deadline)) and ok

    def shutdown(self, timeout_s: float = 30.0) -> bool:
        """Drain within `timeout_s` (the rest is counted as dropped), flush and shut what we
        built with what is left, and release it all. Returns within `timeout_s` +
        `DEADLINE_SLACK_S`; False when work was dropped or telemetry was left unexported."""
        if self._closed:
            return True
        timeout_s = seconds("timeout_s", timeout_s)
        self._closed = True
        deadline = time.monotonic() + timeout_s
        self.processor.drain()
        runner_budget = max(0.0, deadline - _export_reserve(timeout_s) - time.monotonic())
        drained = self.runner.shutdown(runner_budget, report=False)
        self.processor.close()
        for name, instrumentor in self._instrumentors:
            try:
                instrumentor.uninstrument()
            except Exception:
                logger.warning("could not uninstrument %s", name, exc_info=True)
        for guard in self.guards:
            guard.close_by(deadline)
        calls = [(f"shut {p.name}", _bind(p.close, deadline)) for p in self.providers if p.close]
        outcomes = run_until(calls, deadline)
        if not all(outcome.done for outcome in outcomes):
            for guard in self.guards:
                guard.stop()  # abandoned exports stop their retry waits too
        LIVE_CONTENT.enabled = False
        if self._froze_gc:
            gc.unfreeze()  # what configure() froze is collectable again
        if self._switch is not None:
            self._switch.restore()
        unfinished = [outcome.name for outcome in outcomes if not outcome.done]
        self._report(timeout_s, unfinished)
        return drained and not unfinished and self._spans_not_exported() == 0

    def _report(self, timeout_s: float, unfinished: list[str]) -> None:
        """One warning with the numbers, when shutdown left anything behind."""
        turns, evaluations = self.runner.dropped_at_shutdown
        spans = self._spans_not_exported()
        if not (turns or spans or unfinished):
            return
        down = [g.name for g in self.guards if g.breaker.state != CLOSED]
        logger.warning(
            "shutdown deadline %g s: %d spans and %d evaluations not exported%s%s%s",
            timeout_s,
            spans,
            evaluations,
            f" ({turns} turns unfinished, counted as dropped)" if turns else "",
            f"; still running, abandoned: {', '.join(unfinished)}" if unfinished else "",
            f"; unreachable: {', '.join(down)}" if down else "",
        )


def _export_reserve(timeout_s: float) -> float:
    """The part of a budget kept for exporting what evaluation produced."""
    return min(_EXPORT_RESERVE_MAX_S, timeout_s * _EXPORT_SHARE)


def _bind(call: Callable[[float], object] | None, deadline: float) -> Callable[[], object]:
    """`call` with the seconds left before `deadline`, computed when it starts."""
    assert call is not None
    return lambda: call(max(0.0, deadline - time.monotonic()))
