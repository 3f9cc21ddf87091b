"""The OTLP/HTTP receiver (aiohttp): `/v1/traces`, `/v1/metrics`, `/v1/logs`, plus health.

Answers as the OTLP/HTTP specification says: 200 with an `Export*ServiceResponse` in the request's
encoding; 400 with a `google.rpc.Status` message for a body that does not decode; 413 over
`max_request_bytes` (checked on the decompressed body, so a small gzip bomb is refused too); 415 for
another content type or content encoding; 503 with Retry-After when the forward buffer is full;
401 without the configured token. `/healthz` (alive), `/readyz` (taking requests, buffer not
nearly full) and `/metrics` (Prometheus text) are served beside; the health paths need no token.
Request bodies are never logged.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiohttp import web
from google.protobuf import json_format  # type: ignore[import-untyped]
from google.rpc import status_pb2  # type: ignore[import-untyped]

from groundwire.gateway._config import GatewayConfig
from groundwire.gateway._intake import Intake
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF, SIGNALS, Signal

__all__ = ["build_app", "token_matches"]

_ENCODINGS: Final = frozenset({"", "identity", "gzip", "deflate"})
_OPEN_PATHS: Final = frozenset({"/healthz", "/readyz"})
_GRPC_INVALID_ARGUMENT: Final = 3
_GRPC_UNAVAILABLE: Final = 14
_GRPC_RESOURCE_EXHAUSTED: Final = 8
_GRPC_UNAUTHENTICATED: Final = 16

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_METRICS: Final = web.AppKey("metrics", GatewayMetrics)


def token_matches(value: str | None, token: str, header: str) -> bool:
    """True when a header value carries the token (`Bearer <token>` for `authorization`)."""
    if value is None:
        return False
    if header.lower() == "authorization":
        scheme, _, value = value.partition(" ")
        if scheme.lower() != "bearer":
            return False
    return hmac.compare_digest(value.strip().encode(), token.encode())


def _status(
    code: int, grpc_code: int, message: str, content_type: str, **headers: str
) -> web.Response:
    """An error answer with a `google.rpc.Status` body in the request's encoding."""
    status = status_pb2.Status(code=grpc_code, message=message)
    if content_type == CONTENT_PROTOBUF:
        body = status.SerializeToString()
    else:
        content_type = CONTENT_JSON
        body = json.dumps({"code": grpc_code, "message": message}).encode()
    return web.Response(status=code, body=body, content_type=content_type, headers=headers)


class _Receiver:
    """The request handlers, bound to the intake and the gateway's state."""

    def __init__(
        self,
        intake: Intake,
        *,
        max_request_bytes: int,
        health: Callable[[], dict[str, Any]],
        ready: Callable[[], bool],
    ) -> None:
        self.intake = intake
        self.max_bytes = max_request_bytes
        self.health = health
        self.ready = ready

    def handler(self, signal: Signal) -> Handler:
        """The POST handler of one signal."""

        async def export(request: web.Request) -> web.StreamResponse:
            return await self.export(signal, request)

        return export

    async def export(self, signal: Signal, request: web.Request) -> web.StreamResponse:
        """Receive one export request and answer it."""
        content_type = request.content_type
        if content_type not in (CONTENT_PROTOBUF, CONTENT_JSON):
            return self._refuse(
                signal,
                "unsupported_media_type",
                415,
                f"unsupported Content-Type {content_type!r}; OTLP/HTTP takes "
                f"{CONTENT_PROTOBUF} or {CONTENT_JSON}",
                CONTENT_JSON,
            )
        encoding = request.headers.get("Content-Encoding", "").strip().lower()
        if encoding not in _ENCODINGS:
            return self._refuse(
                signal,
                "unsupported_media_type",
                415,
                f"unsupported Content-Encoding {encoding!r}; use gzip, deflate or none",
                content_type,
            )
        declared = request.content_length
        if declared is not None and declared > self.max_bytes:
            return self._too_large(signal, content_type)
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._too_large(signal, content_type)
        except Exception as error:  # a cut or corrupt compressed stream
            return self._refuse(
                signal,
                "malformed",
                400,
                f"the request body could not be read ({type(error).__name__}): is it "
                f"really {encoding or 'uncompressed'}?",
                content_type,
            )
        refusal = await self.intake.accept(signal, body, content_type)
        if refusal is None:
            response = signal.response_type()
            if content_type == CONTENT_PROTOBUF:
                return web.Response(body=response.SerializeToString(), content_type=content_type)
            text = json_format.MessageToJson(response, indent=None)
            return web.Response(body=text.encode(), content_type=content_type)
        if refusal.retry_after_s is not None:  # full or cannot store: try again later
            return _status(
                503,
                _GRPC_UNAVAILABLE,
                refusal.message,
                content_type,
                **{"Retry-After": str(refusal.retry_after_s or 1)},
            )
        return _status(400, _GRPC_INVALID_ARGUMENT, refusal.message, content_type)

    def _too_large(self, signal: Signal, content_type: str) -> web.Response:
        """413 for a body over the limit."""
        return self._refuse(
            signal,
            "too_large",
            413,
            f"request body over the gateway's limit of {self.max_bytes} bytes "
            "(max_request_bytes); send smaller batches",
            content_type,
        )

    def _refuse(
        self, signal: Signal, reason: str, code: int, message: str, content_type: str
    ) -> web.Response:
        """Count a request refused for `reason` and answer `code` (415, 400 or 413) with a
        `google.rpc.Status` saying why (413: RESOURCE_EXHAUSTED, the others
        INVALID_ARGUMENT, as the OTLP specification pairs them)."""
        self.intake.metrics.refused(signal.name, reason)
        grpc_code = _GRPC_RESOURCE_EXHAUSTED if code == 413 else _GRPC_INVALID_ARGUMENT
        return _status(code, grpc_code, message, content_type)

    async def healthz(self, request: web.Request) -> web.StreamResponse:
        """Alive: always 200 while the process serves, with the counters."""
        return web.json_response(self.health())

    async def readyz(self, request: web.Request) -> web.StreamResponse:
        """Ready: 200 while taking requests with room in the buffer, else 503."""
        ready = self.ready()
        return web.json_response({"ready": ready}, status=200 if ready else 503)

    async def metrics(self, request: web.Request) -> web.StreamResponse:
        """Prometheus text exposition of the gateway's metrics."""
        try:
            from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
        except ImportError:
            return web.Response(status=404, text="install groundwire[prometheus] for /metrics\n")
        response = web.Response(body=generate_latest(REGISTRY))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response


def _auth_middleware(token: str, header: str) -> Any:
    """Refuse requests (except health checks) without the token: 401, never logging it."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in _OPEN_PATHS or token_matches(request.headers.get(header), token, header):
            return await handler(request)
        content_type = request.content_type
        if request.path.startswith("/v1/"):
            name = request.path.rsplit("/", 1)[-1]
            if name in SIGNALS:
                request.app[_METRICS].refused(name, "unauthenticated")
        return _status(
            401,
            _GRPC_UNAUTHENTICATED,
            f"missing or wrong credentials in the {header!r} header",
            content_type if content_type == CONTENT_PROTOBUF else CONTENT_JSON,
            **{"WWW-Authenticate": "Bearer"} if header.lower() == "authorization" else {},
        )

    return check


def build_app(
    intake: Intake,
    config: GatewayConfig,
    *,
    health: Callable[[], dict[str, Any]],
    ready: Callable[[], bool],
) -> web.Application:
    """The aiohttp application of the receiver (its request bound and token from `config`)."""
    max_request_bytes = config.max_request_bytes
    token = config.auth_token
    middlewares = [_auth_middleware(token, config.auth_header)] if token else []
    app = web.Application(client_max_size=max_request_bytes, middlewares=middlewares)
    app[_METRICS] = intake.metrics
    receiver = _Receiver(intake, max_request_bytes=max_request_bytes, health=health, ready=ready)
    for signal in SIGNALS.values():
        app.router.add_post(signal.path, receiver.handler(signal))
    app.router.add_get("/healthz", receiver.healthz)
    app.router.add_get("/readyz", receiver.readyz)
    app.router.add_get("/metrics", receiver.metrics)
    return app
