"""Results under the app they belong to: one emitter per `service.name` of the scored turns.

Turns of many apps meet in the gateway. Written with the gateway's own resource, every app's
carrier spans and evaluation metrics would show under `groundwire-gateway`, and a dashboard
could not tell the apps apart. `ServiceEmitter` gives each app's turns an emitter whose
providers carry that app's `service.name` (the evaluation spans share one export queue; each
app's metrics have a reader of their own). Past `MAX_SERVICES` apps, turns of new ones are
written with the gateway's resource, said once in the log.
"""

from __future__ import annotations

import logging
import threading
from typing import Final

from groundwire.emit import Emitter
from groundwire.gateway._telemetry import Providers

__all__ = ["MAX_SERVICES", "ServiceEmitter"]

logger = logging.getLogger("groundwire.gateway")

MAX_SERVICES: Final = 64
"""Apps given providers of their own; each costs a metric reader and its exporter."""


class ServiceEmitter(Emitter):
    """The gateway's emitter: each turn's results carry its app's `service.name`."""

    def __init__(self, providers: Providers, *, max_services: int = MAX_SERVICES) -> None:
        super().__init__(
            tracer_provider=providers.tracer_provider,
            meter_provider=providers.meter_provider,
            logger_provider=providers.logger_provider,
        )
        self._providers = providers
        self._max_services = max_services
        self._by_service: dict[str, Emitter] = {}
        self._lock = threading.Lock()
        self._warned = False

    @property
    def services(self) -> list[str]:
        """The apps given an emitter of their own so far."""
        return list(self._by_service)

    def for_service(self, service: str | None) -> Emitter:
        """The emitter for `service`'s turns (made on first use); ours when unknown or too many."""
        if not service:
            return self
        emitter = self._by_service.get(service)
        if emitter is not None:
            return emitter
        with self._lock:
            emitter = self._by_service.get(service)
            if emitter is not None:
                return emitter
            if len(self._by_service) >= self._max_services:
                if not self._warned:
                    self._warned = True
                    logger.warning(
                        "results of more than %d services: those of further services carry the "
                        "gateway's service.name",
                        self._max_services,
                    )
                return self
            made = self._providers.for_service(service)
            emitter = Emitter(
                tracer_provider=made.tracer_provider,
                meter_provider=made.meter_provider,
                logger_provider=made.logger_provider,
                events=self.events,
            )
            emitter.results.versions.update(self.results.versions)
            self._by_service[service] = emitter
            return emitter
