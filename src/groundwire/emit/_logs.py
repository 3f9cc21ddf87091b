"""Evaluation results as log-based events: one `gen_ai.evaluation.result` log record per score.

OpenTelemetry is deprecating the Span Event API (OTEP 4430): new events are log records with an
event name, emitted through the Logs API and correlated to a span by their trace and span ids. The
GenAI conventions define `gen_ai.evaluation.result` as such an event, parented to the span being
evaluated. Each record here carries:

* the event name `gen_ai.evaluation.result` (OTLP `eventName`);
* the trace and span id of the evaluated span (the turn's root span), never of the carrier span;
* severity INFO, or WARN when the evaluation failed;
* the conventions' attributes (`score_event_attributes`) plus `groundwire.evaluation.mode` and,
  when known, `groundwire.evaluator.version`;
* `Score.details` as the body, only while content capture is on (no `GROUNDWIRE_HIDE_*` switch
  set, and `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` not `NO_CONTENT`, `SPAN_ONLY` or
  false), strings cut to `GROUNDWIRE_MAX_VALUE_LENGTH`: quotes and matched spans are content.

The Python Logs API still lives in `opentelemetry._logs` (status Development); an API `LogRecord`
with `event_name` handed to `Logger.emit` works from opentelemetry-sdk 1.37 on.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, entry_points, version
from typing import Any

from opentelemetry import trace
from opentelemetry._logs import LoggerProvider, LogRecord, SeverityNumber, get_logger_provider
from opentelemetry.trace import NonRecordingSpan

from groundwire import semconv
from groundwire._env import env_str
from groundwire._registry import ENTRY_POINT_GROUP
from groundwire._types import Score
from groundwire._version import __version__
from groundwire.capture import CaptureConfig
from groundwire.emit._attributes import Attributes, score_event_attributes
from groundwire.emit._spans import SpanTarget, target_context

__all__ = [
    "DEFAULT_EVENTS",
    "ResultLogger",
    "content_capture_enabled",
    "evaluator_version",
    "evaluator_versions",
    "registered_version",
    "resolve_events",
]

logger = logging.getLogger("groundwire.emit")

DEFAULT_EVENTS = semconv.EVENTS_BOTH
"""Where results go unless told: both log-based events and span events (docs/online.md says why)."""

_MAX_DEPTH = 8


def resolve_events(value: str | None = None) -> str:
    """`value`, else `GROUNDWIRE_EVENTS`, else the default; a ValueError naming the bad value."""
    source = "events"
    if value is None:
        value = env_str(semconv.ENV_EVENTS)
        source = semconv.ENV_EVENTS
    if value is None:
        return DEFAULT_EVENTS
    choice = value.strip().lower() if isinstance(value, str) else value
    if choice not in semconv.EVENTS_CHOICES:
        raise ValueError(f"{source} must be one of {list(semconv.EVENTS_CHOICES)}, got {value!r}")
    return str(choice)


_NO_EVENT_CONTENT = frozenset({"no_content", "span_only", "false", "0", "no", "off"})
"""Values of the GenAI content switch that keep content out of events."""


def content_capture_enabled(config: CaptureConfig | None = None) -> bool:
    """True unless a `GROUNDWIRE_HIDE_*` switch keeps text off the telemetry, or the GenAI
    instrumentations' `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` is set to keep it out
    of events (`NO_CONTENT`, `SPAN_ONLY`, false)."""
    config = config or CaptureConfig.from_env()
    if config.hide_inputs or config.hide_outputs or config.hide_document_text:
        return False
    genai = (env_str(semconv.ENV_GENAI_CAPTURE_MESSAGE_CONTENT) or "").lower()
    return genai not in _NO_EVENT_CONTENT


@lru_cache(maxsize=256)
def _distribution_version(top: str) -> str | None:
    """The version of the distribution named like the top-level module `top` (`my_evals` or
    `my-evals`), or None. A name lookup, not a scan of every installed distribution (which
    `packages_distributions()` does, about a second in a large environment)."""
    for name in dict.fromkeys((top, top.replace("_", "-"))):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    return None


def evaluator_version(evaluator: object) -> str | None:
    """The evaluator's `version` attribute, else the version of the distribution named like its
    top-level package (groundwire's for the built-ins); None when unknown."""
    declared = getattr(evaluator, "version", None)
    if isinstance(declared, str) and declared.strip():
        return declared.strip()
    top = type(evaluator).__module__.split(".", 1)[0]
    if top == "groundwire":
        return __version__
    if top in ("__main__", "builtins"):
        return None
    return _distribution_version(top)


@lru_cache(maxsize=256)
def registered_version(name: str) -> str | None:
    """The version of whatever registers evaluator `name` in the `groundwire.evaluators`
    entry-point group (groundwire's for the built-ins); None when no entry point names it.

    For places that know a score's evaluator only by name (a scores-file row).
    """
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name != name:
            continue
        if entry_point.value.split(".", 1)[0] == "groundwire":
            return __version__
        return entry_point.dist.version if entry_point.dist is not None else None
    return None


def evaluator_versions(evaluators: Iterable[object]) -> dict[str, str]:
    """Evaluator name -> version, for the evaluators whose version is known."""
    found: dict[str, str] = {}
    for evaluator in evaluators:
        name = getattr(evaluator, "name", None)
        known = evaluator_version(evaluator)
        if isinstance(name, str) and known is not None:
            found[name] = known
    return found


def _body(value: Any, config: CaptureConfig, depth: int = 0) -> Any:
    """`value` as an OTLP AnyValue (maps, lists, scalars), long strings truncated."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, str):
        return config.text(value)
    if depth >= _MAX_DEPTH:
        return config.text(str(value))
    if isinstance(value, Mapping):
        return {str(key): _body(item, config, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_body(item, config, depth + 1) for item in value]
    return config.text(str(value))


class ResultLogger:
    """Emits `gen_ai.evaluation.result` log records on a logger provider (default: the global)."""

    def __init__(
        self,
        logger_provider: LoggerProvider | None = None,
        *,
        capture_content: bool | None = None,
        versions: Mapping[str, str] | None = None,
    ) -> None:
        provider = logger_provider or get_logger_provider()
        self._logger = provider.get_logger(semconv.INSTRUMENTATION_SCOPE, __version__)
        self._capture = CaptureConfig.from_env()
        self.capture_content = (
            content_capture_enabled(self._capture) if capture_content is None else capture_content
        )
        """Whether `Score.details` travel as the record's body."""
        self.versions: dict[str, str] = dict(versions or {})
        """Evaluator name -> `groundwire.evaluator.version`."""

    def attributes(self, score: Score, mode: str) -> Attributes:
        """The record's attributes: the conventions' ones, the mode and the evaluator version."""
        attributes = score_event_attributes(score, self.versions.get(score.name))
        attributes[semconv.GROUNDWIRE_EVALUATION_MODE] = mode
        return attributes

    def body(self, score: Score) -> Any:
        """The details as an AnyValue map, or None when content capture is off or none exist."""
        if not self.capture_content or not score.details:
            return None
        return _body(score.details, self._capture)

    def emit(
        self,
        target: SpanTarget,
        scores: Sequence[Score],
        *,
        mode: str,
        timestamp_ns: int | None = None,
    ) -> int:
        """One record per score, correlated to the evaluated span `target`; returns how many."""
        if not scores:
            return 0
        context = trace.set_span_in_context(NonRecordingSpan(target_context(target)))
        now = timestamp_ns if timestamp_ns is not None else time.time_ns()
        for score in scores:
            severity = SeverityNumber.INFO if score.ok else SeverityNumber.WARN
            self._logger.emit(
                LogRecord(
                    timestamp=now,
                    observed_timestamp=now,
                    context=context,
                    severity_number=severity,
                    severity_text=severity.name,
                    body=self.body(score),
                    attributes=self.attributes(score, mode),
                    event_name=semconv.GEN_AI_EVALUATION_RESULT_EVENT,
                )
            )
        return len(scores)
