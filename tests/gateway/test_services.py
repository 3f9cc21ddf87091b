"""`ServiceEmitter` on the gateway's real providers (built by `build_providers`, capturing spans
and log records, nothing listening downstream): each app's results under its own `service.name`,
one emitter per app, the gateway's own past the bound (said once)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from groundwire import semconv
from groundwire.emit import Emitter
from groundwire.gateway import load_config
from groundwire.gateway._results import ResultCapture
from groundwire.gateway._services import MAX_SERVICES, ServiceEmitter
from groundwire.gateway._telemetry import Providers, build_providers


@pytest.fixture
def providers() -> Iterator[Providers]:
    """The gateway's providers (service `gw`), without Prometheus, shut at the end."""
    config = load_config(flags={"forward": "http://127.0.0.1:9", "service_name": "gw"}, environ={})
    made = build_providers(config, prometheus=False, capture=ResultCapture())
    yield made
    made.shutdown(0.5)


def _service_of(emitter: Emitter) -> tuple[Any, Any]:
    """The `service.name` of the resources its spans and its result log records carry."""
    tracer: Any = emitter.tracer
    logger: Any = emitter.results._logger
    return (
        tracer.resource.attributes[semconv.SERVICE_NAME],
        logger.resource.attributes[semconv.SERVICE_NAME],
    )


def _meter_provider_of(emitter: Emitter) -> Any:
    """The measurement consumer (one per SDK meter provider) its evaluation metrics record to."""
    return emitter.metrics._score._measurement_consumer  # type: ignore[attr-defined]


def test_the_gateway_emitter_writes_with_the_gateways_providers(providers: Providers) -> None:
    """Without a service (None or empty) a turn's results go out under the gateway's own
    resource, through the gateway's tracer, meter and logger providers."""
    emitter = ServiceEmitter(providers)
    assert emitter.for_service(None) is emitter
    assert emitter.for_service("") is emitter
    assert _service_of(emitter) == ("gw", "gw")
    assert _meter_provider_of(emitter) is providers.meter_provider._measurement_consumer
    assert emitter.services == []


def test_each_app_gets_its_own_emitter_once(providers: Providers) -> None:
    """A named app gets an emitter whose spans, log records and metrics carry its
    `service.name` (its providers from `Providers.for_service`), the same one every time, with
    the gateway emitter's event mode and evaluator versions."""
    emitter = ServiceEmitter(providers)
    emitter.results.versions.update({"quoted_spans": "3"})
    app = emitter.for_service("app-a")
    assert app is not emitter
    assert emitter.for_service("app-a") is app
    assert _service_of(app) == ("app-a", "app-a")
    made = providers.services["app-a"]
    assert _meter_provider_of(app) is made.meter_provider._measurement_consumer  # type: ignore[attr-defined]
    assert app.events == emitter.events
    assert app.results.versions == {"quoted_spans": "3"}
    other = emitter.for_service("app-b")
    assert _service_of(other) == ("app-b", "app-b")
    assert emitter.services == ["app-a", "app-b"]


def test_the_event_mode_is_passed_on(providers: Providers, monkeypatch: pytest.MonkeyPatch) -> None:
    """An app's emitter writes events the way the gateway's does (here `span` only)."""
    monkeypatch.setenv("GROUNDWIRE_EVENTS", "span")
    emitter = ServiceEmitter(providers)
    monkeypatch.setenv("GROUNDWIRE_EVENTS", "logs")
    assert emitter.events == "span"
    assert emitter.for_service("app-a").events == "span"


def test_past_the_bound_new_apps_get_the_gateways_emitter_said_once(
    providers: Providers, caplog: pytest.LogCaptureFixture
) -> None:
    """With max_services 2, a third and fourth app get the gateway emitter; one warning names
    the bound; the first two keep theirs."""
    emitter = ServiceEmitter(providers, max_services=2)
    first, second = emitter.for_service("a"), emitter.for_service("b")
    with caplog.at_level(logging.WARNING, logger="groundwire.gateway"):
        assert emitter.for_service("c") is emitter
        assert emitter.for_service("d") is emitter
    assert [r.getMessage() for r in caplog.records] == [
        "results of more than 2 services: those of further services carry the gateway's "
        "service.name"
    ]
    assert emitter.for_service("a") is first
    assert emitter.for_service("b") is second
    assert emitter.services == ["a", "b"]
    assert set(providers.services) == {"a", "b"}


def test_the_default_bound_is_max_services(providers: Providers) -> None:
    """Without max_services, 64 apps get emitters of their own and the 65th does not."""
    assert MAX_SERVICES == 64
    emitter = ServiceEmitter(providers)
    for index in range(MAX_SERVICES):
        assert emitter.for_service(f"app-{index}") is not emitter
    assert emitter.for_service("one-too-many") is emitter
    assert len(emitter.services) == MAX_SERVICES


def test_two_threads_asking_for_a_new_app_at_once_share_one_emitter(
    providers: Providers,
) -> None:
    """Two threads that both miss the app and wait for the lock get the one emitter the first
    made (the second looks again under the lock): one emitter, one set of providers."""
    emitter = ServiceEmitter(providers)
    got: list[Emitter] = []
    with emitter._lock:  # both threads miss the app and queue on the lock
        threads = [
            threading.Thread(target=lambda: got.append(emitter.for_service("app"))) for _ in "ab"
        ]
        for thread in threads:
            thread.start()
        time.sleep(0.5)
    for thread in threads:
        thread.join(10)
    assert len(got) == 2
    assert got[0] is got[1]
    assert emitter.services == ["app"]
