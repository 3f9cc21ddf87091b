"""The OTLP/gRPC receiver (grpc.aio): the trace, metrics and logs `Export` methods.

Requests are taken as raw bytes (decoded once, by the intake) and answered as the OTLP/gRPC
specification says: INVALID_ARGUMENT for a message that does not decode, UNAVAILABLE when the
forward buffer is full (retryable), UNAUTHENTICATED without the token, RESOURCE_EXHAUSTED from
gRPC itself over `max_request_bytes`. TLS with an optional client CA, as the Collector offers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]

from groundwire.gateway._config import GatewayConfig
from groundwire.gateway._http import token_matches
from groundwire.gateway._intake import Intake
from groundwire.gateway._signals import CONTENT_PROTOBUF, SIGNALS, Signal

__all__ = ["start_grpc_server"]


def _handler(intake: Intake, signal: Signal, token: str | None, header: str) -> Any:
    """The unary Export behaviour of one signal, on raw bytes."""
    empty: bytes = signal.response_type().SerializeToString()

    async def export(request: bytes, context: Any) -> bytes:
        if token is not None:
            metadata = dict(context.invocation_metadata() or ())
            if not token_matches(metadata.get(header.lower()), token, header):
                intake.metrics.refused(signal.name, "unauthenticated")
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token")
        refusal = await intake.accept(signal, request, CONTENT_PROTOBUF)
        if refusal is None:
            return empty
        if refusal.retry_after_s is not None:  # full or cannot store: try again later
            await context.abort(grpc.StatusCode.UNAVAILABLE, refusal.message)
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, refusal.message)
        return empty  # not reached: abort raises

    return grpc.unary_unary_rpc_method_handler(export)


async def start_grpc_server(intake: Intake, config: GatewayConfig) -> tuple[Any, int]:
    """Start the server on `config.grpc_listen` (`host:port`) with the request bound, token and
    TLS files of `config`; returns it and the bound port."""
    address = config.grpc_listen
    if address is None:
        raise ValueError("grpc_listen is not set: there is no gRPC receiver to start")
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", config.max_request_bytes),
            ("grpc.so_reuseport", 0),
        ]
    )
    services: dict[str, dict[str, Any]] = {}
    for signal in SIGNALS.values():
        service, method = signal.grpc_method.strip("/").split("/")
        services.setdefault(service, {})[method] = _handler(
            intake, signal, config.auth_token, config.auth_header
        )
    for service, methods in services.items():
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, methods),))
    if config.tls_cert_file and config.tls_key_file:
        pair = (Path(config.tls_key_file).read_bytes(), Path(config.tls_cert_file).read_bytes())
        ca_file = config.tls_client_ca_file
        root = Path(ca_file).read_bytes() if ca_file else None
        credentials = grpc.ssl_server_credentials(
            [pair], root_certificates=root, require_client_auth=root is not None
        )
        port = server.add_secure_port(address, credentials)
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot bind the gRPC receiver to {address}")
    await server.start()
    return server, port
