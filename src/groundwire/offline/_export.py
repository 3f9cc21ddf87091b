"""`--export-otlp`: re-scored results as evaluation spans under the original turns, and metrics.

Each turn's scores travel on one EVALUATOR carrier span (`groundwire.evaluation.mode=offline`),
a child of the turn's root span in the original trace with one link to it, so Jaeger or Tempo
show it under the original request; as `gen_ai.evaluation.result` log records on the turn's root
span (unless `GROUNDWIRE_EVENTS=span`; see `groundwire.emit`); and as points of the groundwire
metric instruments. The providers come from `groundwire.exporters` like every provider
groundwire builds: spans, logs and metrics go over OTLP to `endpoint` (a base such as
`http://collector:4318`, or a gRPC `host:port` when `OTEL_EXPORTER_OTLP_PROTOCOL=grpc`; see
`groundwire.exporters.OtlpTarget`), or, without one, wherever the standard `OTEL_EXPORTER_OTLP_*`
variables say. Their exporters are guarded (a dead endpoint opens a breaker rather than holding
each batch through the SDK's retries) and `close` keeps a deadline; the span guard's counts are
the report of what the endpoint accepted.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry.sdk.resources import Resource

from groundwire import semconv
from groundwire.emit import Emitter, resolve_events
from groundwire.exporters import OtlpTarget, build_otlp_providers
from groundwire.offline._results import TurnResult

__all__ = ["ExportReport", "OtlpExport"]

logger = logging.getLogger("groundwire.offline")

_DEFAULT_SERVICE = "groundwire-rescore"
_FROM_ENVIRONMENT = "the OTEL_EXPORTER_OTLP_* endpoint"
CLOSE_TIMEOUT_S: Final = 30.0
"""How long `close` may take to export what is pending (a dead endpoint is not waited for)."""


_EXPORTER_LOGGER: Final = "opentelemetry.exporter.otlp"
"""Where the OTLP exporters log why an export failed (captured for the report)."""


@dataclass(slots=True)
class ExportReport:
    """What `--export-otlp` delivered: spans the endpoint accepted, and why the rest were not."""

    endpoint: str
    emitted: int = 0
    """Carrier spans created (one per turn with ids and scores)."""
    accepted: int = 0
    """Spans in export calls the endpoint answered with success."""
    rejected: int = 0
    """Spans in export calls that failed (refused, unreachable, an error status, a timeout), or
    not attempted (endpoint known to be unreachable, close deadline passed)."""
    reasons: Counter[str] = field(default_factory=Counter)
    """Why exports failed: the exporter's message -> spans it concerned."""

    @property
    def not_exported(self) -> int:
        """Spans emitted but not accepted: rejected, or dropped before an export was tried."""
        return self.emitted - self.accepted

    @property
    def failed(self) -> bool:
        """True when spans were emitted and the endpoint accepted none of them."""
        return self.emitted > 0 and self.accepted == 0

    def lines(self) -> list[str]:
        """The report's summary lines (each number a counter above)."""
        out = [f"exported {self.accepted} of {self.emitted} evaluation spans to {self.endpoint}"]
        if self.not_exported:
            why = "; ".join(f"{reason} ({count})" for reason, count in self.reasons.items())
            dropped = self.not_exported - self.rejected
            if dropped > 0:
                never = f"never sent, export queue full or close deadline passed ({dropped})"
                why = "; ".join(filter(None, [why, never]))
            out.append(f"not exported: {self.not_exported} evaluation spans: {why or 'unknown'}")
        return out


class _ReasonLog(logging.Handler):
    """Keeps the OTLP exporters' failure messages (first line each) instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        """Remember a failure message."""
        try:
            text = record.getMessage().splitlines()[0][:300]
        except Exception:  # a malformed log call must not break the export
            text = str(record.msg)[:300]
        self.messages.append(text)
        del self.messages[1:-1]

    def reason(self) -> str | None:
        """The last message, with the first (usually the cause) when they differ."""
        if not self.messages:
            return None
        first, last = self.messages[0], self.messages[-1]
        return last if first == last else f"{last} (first: {first})"


class OtlpExport:
    """Sends re-scored turns as carrier spans and metric points; `close` flushes everything."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        service_name: str | None = None,
        span_exporter: Any = None,
        metric_exporter: Any = None,
        log_exporter: Any = None,
        events: str | None = None,
        evaluators: Iterable[object] = (),
    ) -> None:
        name = service_name or os.environ.get("OTEL_SERVICE_NAME") or _DEFAULT_SERVICE
        events = resolve_events(events)
        self._log = _ReasonLog()
        self._logger = logging.getLogger(_EXPORTER_LOGGER)
        self._propagate = self._logger.propagate
        self._logger.addHandler(self._log)
        self._logger.propagate = False
        self._providers = build_otlp_providers(
            OtlpTarget(endpoint=endpoint or None),
            Resource.create({semconv.SERVICE_NAME: name}),
            logs=events != semconv.EVENTS_SPAN,
            exporters={"traces": span_exporter, "metrics": metric_exporter, "logs": log_exporter},
        )
        spans = next(guard for guard in self._providers.guards if guard.kind == "spans")
        self.report = ExportReport(endpoint=endpoint or spans.endpoint or _FROM_ENVIRONMENT)
        """What the endpoint accepted (complete after `close`)."""
        self._lock = threading.Lock()
        spans.observer = self._observe
        self.tracer_provider = self._providers.tracer_provider
        self.meter_provider = self._providers.meter_provider
        self.logger_provider = self._providers.logger_provider
        self.emitter = Emitter(
            tracer_provider=self.tracer_provider,
            meter_provider=self.meter_provider,
            logger_provider=self.logger_provider,
            events=events,
            evaluators=evaluators,
        )
        self.spans = 0
        """Carrier spans emitted."""
        self.log_records = 0
        """`gen_ai.evaluation.result` log records emitted."""

    def _observe(self, outcome: str, count: int, why: str | None) -> None:
        """Count one span export's outcome in the report (with why it failed)."""
        reason = None if outcome == "exported" else why or self._log.reason()
        self._log.messages.clear()
        with self._lock:
            if reason is None:
                self.report.accepted += count
            else:
                self.report.rejected += count
                self.report.reasons[reason] += count

    def send(self, result: TurnResult) -> None:
        """Emit one turn's carrier span and metric points (turns without ids get metrics only)."""
        scores = list(result.scores.values())
        turn = result.turn
        if turn.trace_id and turn.span_id and scores:
            try:
                target = (turn.trace_id, turn.span_id)
                self.emitter.emit_span(target, scores, mode=semconv.EVALUATION_MODE_OFFLINE)
                self.spans += 1
                self.log_records += len(scores) if self.emitter.log_events else 0
                self.report.emitted += 1
            except ValueError as error:
                logger.warning("no evaluation span for turn %s: %s", turn.span_id, error)
        for score in scores:
            self.emitter.record(score, result.durations.get(score.name))

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Flush and shut down the providers within `timeout_s` (exports whatever is pending;
        what the deadline or a dead endpoint cut is counted in the report)."""
        try:
            self._providers.shutdown(timeout_s)
        finally:
            self._logger.removeHandler(self._log)
            self._logger.propagate = self._propagate
