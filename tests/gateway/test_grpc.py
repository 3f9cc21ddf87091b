"""The OTLP/gRPC receiver in-process: the real grpc.aio server of `start_grpc_server` on
127.0.0.1, fed by a real intake (a `Forwarder` that is not started, so accepted requests stay
buffered), called by a real grpc.aio channel with raw OTLP bytes. The status codes the OTLP/gRPC
specification asks for, the token check, the request bound and TLS (with and without a client
CA). Each test starts its own server (tens of milliseconds), so mutation runs stay fast."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from tests.gateway._scripted import traces_request

from groundwire.gateway import load_config
from groundwire.gateway._forwarder import Forwarder
from groundwire.gateway._grpc import start_grpc_server
from groundwire.gateway._intake import Intake
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._signals import SIGNALS
from groundwire.gateway._transport import HttpTransport

_METHODS = {name: signal.grpc_method for name, signal in SIGNALS.items()}


@dataclass
class Served:
    """A running gRPC receiver: its port and intake, and a channel to it."""

    port: int
    intake: Intake
    channel: Any

    async def call(self, signal: str, body: bytes, metadata: tuple[Any, ...] = ()) -> bytes:
        """One Export call of `signal` with raw bytes; the raw answer."""
        method = self.channel.unary_unary(_METHODS[signal])
        answer: bytes = await method(body, timeout=10, metadata=metadata)
        return answer

    async def refused(
        self, signal: str, body: bytes, metadata: tuple[Any, ...] = ()
    ) -> tuple[Any, str]:
        """(status code, details) of a call that fails."""
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await self.call(signal, body, metadata)
        return error.value.code(), error.value.details()


@asynccontextmanager
async def _served(
    channel: Callable[[int], Any] | None = None, **flags: Any
) -> AsyncIterator[Served]:
    """The gRPC receiver of a gateway configured by `flags`, on a free port of 127.0.0.1."""
    config = load_config(
        flags={"forward": "http://127.0.0.1:9", "grpc_listen": "127.0.0.1:0", **flags},
        environ={},
    )
    metrics = GatewayMetrics(None)
    transport = HttpTransport(
        "http://127.0.0.1:9", headers={}, timeout_s=1, compression="none", ca_file=None
    )
    intake = Intake(Forwarder(transport, metrics, config), None, metrics)
    server, port = await start_grpc_server(intake, config)
    opened = (
        channel(port) if channel is not None else grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    )
    try:
        yield Served(port, intake, opened)
    finally:
        await opened.close()
        await server.stop(None)


def _run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


def test_each_signal_is_accepted_with_its_empty_response() -> None:
    """Traces, metrics and logs each answer their own empty Export response, and their items
    are counted and buffered as received."""

    async def scenario() -> None:
        async with _served() as served:
            assert await served.call("traces", traces_request("a", "b")) == b""
            metrics = metrics_service_pb2.ExportMetricsServiceRequest()
            gauge = metrics.resource_metrics.add().scope_metrics.add().metrics.add(name="m")
            gauge.gauge.data_points.add(as_int=1)
            assert await served.call("metrics", metrics.SerializeToString()) == b""
            logs = logs_service_pb2.ExportLogsServiceRequest()
            logs.resource_logs.add().scope_logs.add().log_records.add()
            assert await served.call("logs", logs.SerializeToString()) == b""
            assert served.intake.metrics.snapshot() == {
                "received:traces": 2,
                "received:metrics": 1,
                "received:logs": 1,
            }
            assert served.intake.forwarder.buffered_requests == 3

    _run(scenario)


def test_a_malformed_message_is_invalid_argument() -> None:
    """Bytes that are not the signal's message: INVALID_ARGUMENT with the decoder's message,
    counted as malformed, nothing buffered."""

    async def scenario() -> None:
        async with _served() as served:
            code, details = await served.refused("traces", b"\xff\xff\xff")
            assert code == grpc.StatusCode.INVALID_ARGUMENT
            assert details
            assert served.intake.metrics.snapshot() == {"refused:traces:malformed": 1}
            assert served.intake.forwarder.buffered_requests == 0

    _run(scenario)


def test_a_full_buffer_is_unavailable() -> None:
    """A request that does not fit the forward buffer is UNAVAILABLE (retryable) with the
    intake's message, after the one that filled it was taken."""

    async def scenario() -> None:
        body = traces_request("a" * 40)
        async with _served(max_request_bytes=len(body), buffer_max_bytes=len(body)) as served:
            assert await served.call("traces", body) == b""
            code, details = await served.refused("traces", body)
            assert code == grpc.StatusCode.UNAVAILABLE
            assert details == (
                "the gateway's forward buffer is full (downstream slow or down); retry later"
            )
            assert served.intake.metrics.snapshot() == {
                "received:traces": 1,
                "refused:traces:buffer_full": 1,
            }

    _run(scenario)


def test_a_request_over_the_bound_is_resource_exhausted() -> None:
    """gRPC itself refuses a message over max_request_bytes; one of exactly the bound passes."""

    async def scenario() -> None:
        async with _served(max_request_bytes=64) as served:
            exact = traces_request("n" * 56)
            assert len(exact) == 64
            assert await served.call("traces", exact) == b""
            code, _ = await served.refused("traces", traces_request("n" * 57))
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED

    _run(scenario)


def test_the_token_is_checked_before_anything_else() -> None:
    """With auth_token: no token or a wrong one is UNAUTHENTICATED, counted per signal, and the
    message is not even decoded; `Bearer <token>` passes."""

    async def scenario() -> None:
        async with _served(auth_token="s3cret") as served:
            code, details = await served.refused("traces", traces_request("a"))
            assert (code, details) == (grpc.StatusCode.UNAUTHENTICATED, "missing or wrong token")
            wrong = (("authorization", "Bearer nope"),)
            code, _ = await served.refused("logs", b"\xff\xff", wrong)
            assert code == grpc.StatusCode.UNAUTHENTICATED
            right = (("authorization", "Bearer s3cret"),)
            assert await served.call("traces", traces_request("a"), right) == b""
            assert served.intake.metrics.snapshot() == {
                "refused:traces:unauthenticated": 1,
                "refused:logs:unauthenticated": 1,
                "received:traces": 1,
            }

    _run(scenario)


def test_a_token_in_a_mixed_case_header_is_read_lower_cased() -> None:
    """auth_header X-Api-Key: gRPC metadata keys are lower case, and the bare value passes."""

    async def scenario() -> None:
        async with _served(auth_token="k", auth_header="X-Api-Key") as served:
            assert await served.call("traces", traces_request("a"), (("x-api-key", "k"),)) == b""
            code, _ = await served.refused("traces", traces_request("a"), (("x-other", "k"),))
            assert code == grpc.StatusCode.UNAUTHENTICATED

    _run(scenario)


def test_start_without_a_grpc_address_is_refused() -> None:
    """No grpc_listen: a ValueError saying there is nothing to start."""
    config = load_config(flags={"forward": "http://127.0.0.1:9"}, environ={})
    intake = Intake(None, None, GatewayMetrics(None))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^grpc_listen is not set: there is no gRPC receiver"):
        asyncio.run(start_grpc_server(intake, config))


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and a client certificate, signed by it."""
    directory = tmp_path_factory.mktemp("tls")
    paths = {name: directory / name for name in ("ca.key", "ca.pem", "san.ext")}
    paths["san.ext"].write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", paths["ca.key"], "-out", paths["ca.pem"], "-days", "1",
             "-subj", "/CN=test-ca")  # fmt: skip
    for who in ("server", "client"):
        key, csr, pem = (directory / f"{who}.{ext}" for ext in ("key", "csr", "pem"))
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", key, "-out", csr, "-subj", f"/CN={who}")  # fmt: skip
        ca, ca_key, ext = paths["ca.pem"], paths["ca.key"], paths["san.ext"]
        _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                 "-out", pem, "-days", "1", "-extfile", ext)  # fmt: skip
        paths[f"{who}.key"], paths[f"{who}.pem"] = key, pem
    return paths


def _tls_channel(certificates: dict[str, Path], *, client: bool) -> Callable[[int], Any]:
    """A channel factory trusting the test CA, presenting the client certificate if `client`."""

    def open_channel(port: int) -> Any:
        credentials = grpc.ssl_channel_credentials(
            root_certificates=certificates["ca.pem"].read_bytes(),
            private_key=certificates["client.key"].read_bytes() if client else None,
            certificate_chain=certificates["client.pem"].read_bytes() if client else None,
        )
        return grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials)

    return open_channel


def test_tls_serves_secure_channels_only(certificates: dict[str, Path]) -> None:
    """With a certificate and key the receiver speaks TLS: a channel trusting the CA gets
    through, a plain one does not."""
    tls = {"tls_cert_file": str(certificates["server.pem"]),
           "tls_key_file": str(certificates["server.key"])}  # fmt: skip

    async def scenario() -> None:
        async with _served(_tls_channel(certificates, client=False), **tls) as served:
            assert await served.call("traces", traces_request("a")) == b""
            async with grpc.aio.insecure_channel(f"127.0.0.1:{served.port}") as plain:
                with pytest.raises(grpc.aio.AioRpcError) as error:
                    await plain.unary_unary(_METHODS["traces"])(traces_request("b"), timeout=3)
                assert error.value.code() == grpc.StatusCode.UNAVAILABLE
            assert served.intake.metrics.snapshot() == {"received:traces": 1}

    _run(scenario)


def test_a_client_ca_requires_client_certificates(certificates: dict[str, Path]) -> None:
    """With a client CA too, a channel presenting a certificate of that CA gets through and one
    without a client certificate fails the handshake."""
    tls = {"tls_cert_file": str(certificates["server.pem"]),
           "tls_key_file": str(certificates["server.key"]),
           "tls_client_ca_file": str(certificates["ca.pem"])}  # fmt: skip

    async def scenario() -> None:
        async with _served(_tls_channel(certificates, client=True), **tls) as served:
            assert await served.call("traces", traces_request("a")) == b""
            bare = _tls_channel(certificates, client=False)(served.port)
            try:
                with pytest.raises(grpc.aio.AioRpcError) as error:
                    await bare.unary_unary(_METHODS["traces"])(traces_request("b"), timeout=3)
                assert error.value.code() == grpc.StatusCode.UNAVAILABLE
            finally:
                await bare.close()
            assert served.intake.metrics.snapshot() == {"received:traces": 1}

    _run(scenario)


def test_a_port_held_by_another_receiver_is_not_shared() -> None:
    """SO_REUSEPORT is off: a second receiver on the port a running one holds fails to bind
    instead of silently sharing its requests."""

    async def scenario() -> None:
        async with _served() as first:
            address = f"127.0.0.1:{first.port}"
            config = load_config(
                flags={"forward": "http://127.0.0.1:9", "grpc_listen": address}, environ={}
            )
            with pytest.raises((RuntimeError, OSError), match=address):
                await start_grpc_server(first.intake, config)

    _run(scenario)
