"""Writing inline scores onto a turn's root span (`runner._inline`), on real SDK spans: the next
free `evaluations.{i}` index, the public setters on a span still recording, the span's own
containers (under its limits, left frozen) on one the SDK already ended, and False for a span of
another shape. Milliseconds in all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import Span, SpanLimits, TracerProvider

from groundwire import Score, semconv
from groundwire.runner import inline_supported, write_scores
from groundwire.runner._inline import next_evaluation_index

_SCORES = [
    Score(name="a", value=0.5, label="grounded"),
    Score(name="b", value=1.0, explanation="fine"),
]


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    """A tracer provider whose spans allow two attributes per event (a score's event has three)
    and values of 4 characters."""
    provider = TracerProvider(
        span_limits=SpanLimits(max_event_attributes=2, max_attribute_length=4)
    )
    yield provider
    provider.shutdown()


def _span(provider: TracerProvider, *, ended: bool, **attributes: Any) -> Span:
    """A root span of the provider, ended or still recording."""
    span = provider.get_tracer("app").start_span("rag", attributes=attributes)
    if ended:
        span.end()
    assert isinstance(span, Span)
    return span


def test_this_sdk_calls_the_ending_hook() -> None:
    """The installed opentelemetry-sdk (>= 1.36) has `_on_ending`, so inline mode is on."""
    assert inline_supported() is True


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        (None, 0),
        ([], 0),
        (["evaluations.0.evaluation.name"], 1),
        (["evaluations.3.evaluation.score", "evaluations.1.evaluation.name"], 4),
        (["evaluations.12.evaluation.name", "evaluations.2.evaluation.name"], 13),
        (["xevaluations.5.name", "evaluations.x.name", "evaluations.7", "input.value"], 0),
    ],
)
def test_the_next_index_is_past_the_highest_one_used(keys: list[str] | None, expected: int) -> None:
    """One past the highest `evaluations.{i}.` index among the keys; other keys do not count."""
    attributes = None if keys is None else dict.fromkeys(keys, "v")
    assert next_evaluation_index(attributes) == expected


def test_no_scores_is_written_at_once(provider: TracerProvider) -> None:
    """Nothing to write is a success that leaves the span as it was."""
    span = _span(provider, ended=True, kept="yes")
    assert write_scores(span, []) is True
    assert dict(span.attributes or {}) == {"kept": "yes"} and not span.events


def test_a_recording_span_gets_attributes_and_events_through_its_setters(
    provider: TracerProvider,
) -> None:
    """Attributes from the next free index, one result event per score (under the limits)."""
    span = _span(provider, ended=False, **{"evaluations.0.evaluation.name": "old"})
    assert write_scores(span, _SCORES) is True
    attributes = dict(span.attributes or {})
    assert attributes["evaluations.1.evaluation.name"] == "a"
    assert attributes["evaluations.2.evaluation.score"] == 1.0
    assert [e.name for e in span.events] == [semconv.GEN_AI_EVALUATION_RESULT_EVENT] * 2
    values = [(e.attributes or {})[semconv.GEN_AI_EVALUATION_SCORE_VALUE] for e in span.events]
    assert values == [0.5, 1.0]
    span.end()


def test_a_recording_span_without_events_gets_only_attributes(provider: TracerProvider) -> None:
    """`events=False`: the attributes, no event."""
    span = _span(provider, ended=False)
    assert write_scores(span, _SCORES, events=False) is True
    assert dict(span.attributes or {})["evaluations.0.evaluation.name"] == "a"
    assert not span.events
    span.end()


def test_an_ended_span_gets_them_in_its_containers_which_stay_frozen(
    provider: TracerProvider,
) -> None:
    """On a span the SDK already ended: attributes from the next free index, events at its end
    time under the span's event limits, and both containers still refuse changes after."""
    span = _span(provider, ended=True, **{"evaluations.0.evaluation.name": "old"})
    assert not span.is_recording()
    assert write_scores(span, _SCORES) is True
    attributes = span.attributes
    assert attributes is not None
    assert attributes["evaluations.0.evaluation.name"] == "old"
    assert attributes["evaluations.1.evaluation.label"] == "grou"  # the span's length limit
    assert attributes["evaluations.2.evaluation.explanation"] == "fine"
    events = span.events
    assert [e.name for e in events] == [semconv.GEN_AI_EVALUATION_RESULT_EVENT] * 2
    assert all(e.timestamp == span.end_time for e in events)
    first = events[0].attributes
    assert first is not None  # two attributes at most: the oldest (the name) made way
    assert dict(first) == {
        semconv.GEN_AI_EVALUATION_SCORE_VALUE: 0.5,
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: "grou",
    }
    with pytest.raises(TypeError):
        attributes["late"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        first["late"] = 1  # type: ignore[index]


def test_an_ended_span_without_events_gets_only_attributes(provider: TracerProvider) -> None:
    """`events=False` on an ended span: the attributes, no event."""
    span = _span(provider, ended=True)
    assert write_scores(span, _SCORES, events=False) is True
    assert (span.attributes or {})["evaluations.1.evaluation.name"] == "b"
    assert not span.events


class _OtherShape:
    """An ended span of another SDK: none of (or not all of) the containers inline writing
    needs."""

    def __init__(self, **parts: Any) -> None:
        self.attributes: dict[str, Any] = {}
        self.end_time = 1
        for name, value in parts.items():
            setattr(self, name, value)

    def is_recording(self) -> bool:
        """Ended."""
        return False


def test_a_span_of_another_shape_is_left_alone(provider: TracerProvider) -> None:
    """Without the SDK's lock, bounded attributes and bounded event list, nothing is written and
    the caller is told (False), whichever of the three is missing."""
    ended = _span(provider, ended=True)
    lock, attributes, events = ended._lock, ended._attributes, ended._events
    shapes = [
        _OtherShape(),
        _OtherShape(_attributes=attributes, _events=events),
        _OtherShape(_lock=lock, _attributes={}, _events=events),
        _OtherShape(_lock=lock, _attributes=attributes, _events=[]),
    ]
    for shape in shapes:
        assert write_scores(shape, _SCORES) is False  # type: ignore[arg-type]
    assert dict(attributes or {}) == {} and not events


def test_an_ended_spans_own_attribute_container_is_frozen_again(provider: TracerProvider) -> None:
    """After writing, the span's own attribute container refuses changes again, as the SDK
    left it."""
    span = _span(provider, ended=True)
    assert write_scores(span, _SCORES) is True
    with pytest.raises(TypeError):
        span._attributes["late"] = 1  # type: ignore[index]


def test_a_span_of_the_sdks_shape_without_limits_gets_unbounded_events(
    provider: TracerProvider,
) -> None:
    """A span with the SDK's lock and containers but no limits object is written, with its
    events' attributes not cut."""
    ended = _span(provider, ended=True)
    shape = _OtherShape(_lock=ended._lock, _attributes=ended._attributes, _events=ended._events)
    assert write_scores(shape, _SCORES) is True  # type: ignore[arg-type]
    first = ended._events[0].attributes
    assert first is not None and first[semconv.GEN_AI_EVALUATION_SCORE_LABEL] == "grounded"
    assert len(first) == 3
