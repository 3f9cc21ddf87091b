"""The gateway's own metrics in-process, read back through the SDK's `InMemoryMetricReader`: each
instrument's name, unit, description and attributes, the exact tallies beside them, the gauges,
the scoring lag, and what the scoring process's counts become in the parent (`absorb`)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from groundwire import semconv
from groundwire._version import __version__
from groundwire.gateway._metrics import GatewayMetrics

_SIGNAL = semconv.GATEWAY_SIGNAL
_REASON = semconv.GATEWAY_REASON


def _collect(reader: InMemoryMetricReader) -> dict[str, dict[str, Any]]:
    """Each metric by name: unit, description, scope, and its points as (attributes, value)."""
    data = reader.get_metrics_data()
    assert data is not None
    out = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                points = [
                    (dict(p.attributes or {}), getattr(p, "value", None) or getattr(p, "sum", None))
                    for p in metric.data.data_points
                ]
                out[metric.name] = {
                    "unit": metric.unit,
                    "description": metric.description,
                    "scope": (scope.scope.name, scope.scope.version),
                    "points": points,
                    "data": metric.data,
                }
    return out


def _metrics() -> tuple[GatewayMetrics, InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    return GatewayMetrics(MeterProvider(metric_readers=[reader]), scope="test.scope"), reader


def test_each_counter_has_its_name_unit_description_and_attributes() -> None:
    """Every counter, once used, is exported with its unit, its description and the signal
    (and reason) attributes, under the scope asked for."""
    metrics, reader = _metrics()
    metrics.received("traces", 3)
    metrics.forwarded("logs", 2)
    metrics.retried("metrics", 4)
    metrics.dropped("traces", 5, "expired")
    metrics.refused("logs", "malformed")
    metrics.late_spans(6)
    metrics.evicted(7)
    metrics.not_scored(8, "shutdown")
    metrics.replayed(9)
    metrics.corrupt(10)
    metrics.queued_results("traces", 11)
    metrics.scored_turns(12)
    got = {
        name: (m["unit"], m["description"], m["points"])
        for name, m in _collect(reader).items()
        if name != semconv.METRIC_GATEWAY_SCORING_LAG
    }
    assert got == {
        semconv.METRIC_GATEWAY_RECEIVED: ("{item}", "Items accepted.", [({_SIGNAL: "traces"}, 3)]),
        semconv.METRIC_GATEWAY_FORWARDED: ("{item}", "Items delivered.", [({_SIGNAL: "logs"}, 2)]),
        semconv.METRIC_GATEWAY_RETRIED: (
            "{item}",
            "Items sent again.",
            [({_SIGNAL: "metrics"}, 4)],
        ),
        semconv.METRIC_GATEWAY_DROPPED: (
            "{item}",
            "Accepted items that never reached downstream.",
            [({_SIGNAL: "traces", _REASON: "expired"}, 5)],
        ),
        semconv.METRIC_GATEWAY_REFUSED: (
            "{request}",
            "Requests answered with an error status.",
            [({_SIGNAL: "logs", _REASON: "malformed"}, 1)],
        ),
        semconv.METRIC_GATEWAY_LATE_SPANS: ("{span}", "Spans after scoring.", [({}, 6)]),
        semconv.METRIC_GATEWAY_EVICTED_TRACES: (
            "{trace}",
            "Traces closed early at the open-trace or memory bound.",
            [({}, 7)],
        ),
        semconv.METRIC_GATEWAY_NOT_SCORED: (
            "{span}",
            "Spans forwarded but left out of scoring.",
            [({_REASON: "shutdown"}, 8)],
        ),
        semconv.METRIC_GATEWAY_REPLAYED: ("{request}", "Requests replayed from disk.", [({}, 9)]),
        semconv.METRIC_GATEWAY_CORRUPT: (
            "{request}",
            "Damaged queue records skipped.",
            [({}, 10)],
        ),
        semconv.METRIC_GATEWAY_QUEUED_RESULTS: (
            "{item}",
            "Evaluation-result items committed to the persistent queue.",
            [({_SIGNAL: "traces"}, 11)],
        ),
        semconv.METRIC_GATEWAY_SCORED_TURNS: ("{turn}", "Turns scored.", [({}, 12)]),
    }
    assert {m["scope"] for m in _collect(reader).values()} == {("test.scope", __version__)}


def test_the_tallies_count_exactly_by_kind_signal_and_reason() -> None:
    """The tallies beside the instruments: drops both by signal and by signal and reason,
    refusals by signal and reason, the rest by their own key; `count` of a key never used is 0."""
    metrics, _ = _metrics()
    metrics.received("traces", 3)
    metrics.received("traces", 2)
    metrics.dropped("traces", 5, "expired")
    metrics.dropped("traces", 1, "shutdown")
    metrics.refused("logs", "malformed")
    metrics.refused("logs", "malformed")
    metrics.not_scored(8, "unreadable")
    metrics.queued_results("logs", 4)
    metrics.replayed(2)
    metrics.corrupt(1)
    metrics.evicted(3)
    metrics.late_spans(2)
    metrics.scored_turns(9)
    metrics.forwarded("metrics", 7)
    metrics.retried("metrics", 1)
    assert metrics.snapshot() == {
        "received:traces": 5,
        "dropped:traces": 6,
        "dropped:traces:expired": 5,
        "dropped:traces:shutdown": 1,
        "refused:logs:malformed": 2,
        "not_scored:unreadable": 8,
        "queue_results:logs": 4,
        "queue_replayed": 2,
        "queue_corrupt": 1,
        "evicted_traces": 3,
        "late_spans": 2,
        "scored_turns": 9,
        "forwarded:metrics": 7,
        "retried:metrics": 1,
    }
    assert metrics.count("received:traces") == 5 and metrics.count("received:logs") == 0


def test_tallies_only_metrics_count_without_instruments() -> None:
    """With no meter provider (the scoring process) every call still tallies."""
    metrics = GatewayMetrics(None)
    metrics.received("traces", 2)
    metrics.refused("traces", "too_large")
    assert metrics.snapshot() == {"received:traces": 2, "refused:traces:too_large": 1}


def test_watched_gauges_are_read_at_each_collection() -> None:
    """A watched gauge reports what its function returns when collected (and `gauge` reads it
    now); a gauge not watched reports nothing, and reads 0."""
    metrics, reader = _metrics()
    size = [3]
    metrics.watch(semconv.METRIC_GATEWAY_QUEUE_SIZE, lambda: size[0])
    metrics.watch(semconv.METRIC_GATEWAY_DISK_BYTES, lambda: 2.5)
    assert metrics.gauge(semconv.METRIC_GATEWAY_QUEUE_SIZE) == 3.0
    assert isinstance(metrics.gauge(semconv.METRIC_GATEWAY_QUEUE_SIZE), float)
    assert metrics.gauge(semconv.METRIC_GATEWAY_OPEN_TRACES) == 0.0
    got = _collect(reader)
    assert got[semconv.METRIC_GATEWAY_QUEUE_SIZE]["points"] == [({}, 3)]
    assert got[semconv.METRIC_GATEWAY_DISK_BYTES]["points"] == [({}, 2.5)]
    assert semconv.METRIC_GATEWAY_OPEN_TRACES not in got
    size[0] = 4
    assert _collect(reader)[semconv.METRIC_GATEWAY_QUEUE_SIZE]["points"] == [({}, 4)]


def test_every_gauge_has_its_unit_and_description() -> None:
    """The six gauges, each watched: exported with their units and descriptions."""
    metrics, reader = _metrics()
    gauges = {
        semconv.METRIC_GATEWAY_QUEUE_SIZE: ("{request}", "Requests in the forward buffer."),
        semconv.METRIC_GATEWAY_QUEUE_BYTES: ("By", "Bytes in the forward buffer."),
        semconv.METRIC_GATEWAY_QUEUE_CAPACITY: ("By", "Size limit of the forward buffer."),
        semconv.METRIC_GATEWAY_OPEN_TRACES: ("{trace}", "Traces being grouped."),
        semconv.METRIC_GATEWAY_DISK_BYTES: ("By", "Bytes in the persistent queue."),
        semconv.METRIC_GATEWAY_DISK_RECORDS: ("{request}", "Requests in the persistent queue."),
    }
    for name in gauges:
        metrics.watch(name, lambda: 1)
    got = _collect(reader)
    assert {name: (got[name]["unit"], got[name]["description"]) for name in gauges} == gauges


def test_the_scoring_lag_is_a_histogram_in_seconds_with_its_buckets() -> None:
    """Each lag is recorded in the histogram (seconds, buckets from 0.5 s to 5 min) and counted
    as a scored trace; nothing is kept for `take_lags` when there are instruments."""
    metrics, reader = _metrics()
    metrics.scoring_lag(0.7)
    metrics.scoring_lag(4.0)
    lag = _collect(reader)[semconv.METRIC_GATEWAY_SCORING_LAG]
    assert lag["unit"] == "s"
    assert lag["description"] == "First span of a trace received to its turns handed to the runner."
    point = lag["data"].data_points[0]
    assert list(point.explicit_bounds) == [0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300]
    assert (point.count, point.sum) == (2, 4.7)
    assert metrics.count("scored_traces") == 2
    assert metrics.take_lags() == []


def test_tallies_only_lags_are_kept_until_taken_up_to_a_bound() -> None:
    """Without instruments the lags are kept for the parent, at most 10,000 between two takes;
    a take empties them."""
    metrics = GatewayMetrics(None)
    for index in range(10_001):
        metrics.scoring_lag(float(index))
    lags = metrics.take_lags()
    assert len(lags) == 10_000 and lags[-1] == 9_999.0
    assert metrics.count("scored_traces") == 10_001
    assert metrics.take_lags() == []
    metrics.scoring_lag(1.5)
    assert metrics.take_lags() == [1.5]


def test_absorb_records_what_the_scoring_process_counted_since_its_last_report() -> None:
    """Late spans, evicted traces and spans not scored grow by the difference between two
    reports (a key new in the later one counts whole; unchanged or smaller keys add nothing;
    other keys are left to their own path); the lags become scored traces."""
    metrics, reader = _metrics()
    before = {"late_spans": 2, "evicted_traces": 5, "not_scored:shutdown": 1, "scored_turns": 1}
    after = {
        "late_spans": 5,
        "evicted_traces": 5,
        "not_scored:shutdown": 4,
        "not_scored:unreadable": 2,
        "scored_turns": 9,
        "received:traces": 3,
    }
    metrics.absorb(before, after, [0.5, 2.0])
    metrics.absorb({"late_spans": 9}, {"late_spans": 8}, [])
    assert metrics.snapshot() == {
        "late_spans": 3,
        "not_scored:shutdown": 3,
        "not_scored:unreadable": 2,
        "scored_traces": 2,
    }
    got = _collect(reader)
    assert got[semconv.METRIC_GATEWAY_NOT_SCORED]["points"] == [
        ({_REASON: "shutdown"}, 3),
        ({_REASON: "unreadable"}, 2),
    ]
    assert got[semconv.METRIC_GATEWAY_SCORING_LAG]["data"].data_points[0].count == 2


def test_absorb_counts_evicted_traces_by_their_growth() -> None:
    """Evicted traces grow by the difference, once."""
    metrics = GatewayMetrics(None)
    metrics.absorb({"evicted_traces": 1}, {"evicted_traces": 4}, [])
    assert metrics.snapshot() == {"evicted_traces": 3}


def test_the_instruments_are_under_the_gateways_scope_by_default() -> None:
    """Without a scope given, the instruments live under `groundwire.gateway`."""
    reader = InMemoryMetricReader()
    GatewayMetrics(MeterProvider(metric_readers=[reader])).received("traces", 1)
    assert {m["scope"] for m in _collect(reader).values()} == {("groundwire.gateway", __version__)}


def test_a_gauge_not_watched_reports_nothing_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Collecting a gauge nobody watches is quiet: no observation and no failed-callback line."""
    metrics, reader = _metrics()
    metrics.received("traces", 1)
    caplog.set_level(logging.WARNING)
    got = _collect(reader)
    assert semconv.METRIC_GATEWAY_QUEUE_SIZE not in got
    assert semconv.METRIC_GATEWAY_RECEIVED in got
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_absorb_counts_a_growth_of_one_and_keeps_a_reason_with_colons() -> None:
    """A count grown by exactly one is recorded; a not-scored reason is everything after the
    first colon of its key."""
    metrics = GatewayMetrics(None)
    metrics.absorb({"late_spans": 4}, {"late_spans": 5, "not_scored:odd:reason": 2}, [])
    assert metrics.snapshot() == {"late_spans": 1, "not_scored:odd:reason": 2}
