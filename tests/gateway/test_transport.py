"""The forwarder's transports in-process against real downstreams on 127.0.0.1: an aiohttp
OTLP/HTTP server and a grpc.aio OTLP/gRPC server, each answering from a script (status,
Retry-After, partial success). What goes out (path, headers, bytes, compression, metadata) and
how each answer is classified, as the OTLP specification says; plus `Batch` and
`retry_after_seconds`. One event loop per test; servers start in milliseconds."""

from __future__ import annotations

import asyncio
import email.utils
import gzip
import ssl
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from tests.gateway._scripted import http_downstream, make_certificates, traces_request

from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF, SIGNALS, decode
from groundwire.gateway._transport import (
    Batch,
    GrpcTransport,
    HttpTransport,
    Outcome,
    retry_after_seconds,
)

_TRACES = SIGNALS["traces"]
_LOGS = SIGNALS["logs"]


def _partial(rejected: int) -> bytes:
    """A traces response reporting `rejected` spans as refused."""
    response = trace_service_pb2.ExportTraceServiceResponse()
    response.partial_success.rejected_spans = rejected
    response.partial_success.error_message = "some were bad"
    return bytes(response.SerializeToString())


def _batch(body: bytes = b"", content_type: str = CONTENT_PROTOBUF, signal: Any = _TRACES) -> Batch:
    body = body or traces_request("a")
    message = decode(signal, body, content_type) if content_type == CONTENT_JSON else None
    return Batch(signal, body, content_type, 1, message)


def _run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


# --- Batch and Retry-After ------------------------------------------------------------------------


def test_a_protobuf_batch_is_its_body() -> None:
    """A protobuf batch's protobuf form is the very body; its size the body's length."""
    body = traces_request("a", "b")
    batch = _batch(body)
    assert batch.protobuf() is body
    assert batch.size == len(body)
    assert batch.encoded is None
    assert (batch.attempts, batch.seqs) == (0, ())
    assert 0 < batch.received <= time.monotonic()


def test_a_json_batch_is_encoded_once_and_lets_the_message_go() -> None:
    """A JSON batch encodes its decoded message on first use, keeps the bytes (the same object
    on a second call) and drops the message; its size stays the JSON body's."""
    body = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "a"}]}]}]}'
    batch = _batch(body, CONTENT_JSON)
    encoded = batch.protobuf()
    parsed = trace_service_pb2.ExportTraceServiceRequest()
    parsed.ParseFromString(encoded)
    assert parsed.resource_spans[0].scope_spans[0].spans[0].name == "a"
    assert type(encoded) is bytes
    assert batch.message is None
    assert batch.encoded is encoded
    assert batch.protobuf() is encoded
    assert batch.size == len(body)


def test_retry_after_in_seconds_and_as_a_date() -> None:
    """Delay-seconds (stripped, capped at 300), an HTTP-date (seconds from now, never below 0,
    capped at 300); absent, empty or unreadable is None."""
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("") is None
    assert retry_after_seconds(" 7 ") == 7.0
    assert retry_after_seconds("300") == 300.0
    assert retry_after_seconds("301") == 300.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("-5") is None
    ahead = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= (retry_after_seconds(ahead) or 0) <= 60
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    assert retry_after_seconds(past) == 0.0
    far = email.utils.formatdate(time.time() + 3600, usegmt=True)
    assert retry_after_seconds(far) == 300.0


# --- OTLP/HTTP ------------------------------------------------------------------------------------


def _http(endpoint: str, **options: Any) -> HttpTransport:
    settings: dict[str, Any] = {"headers": {}, "timeout_s": 5, "compression": "none",
                                "ca_file": None, **options}  # fmt: skip
    return HttpTransport(endpoint, **settings)


def test_http_posts_the_body_as_received_to_the_signal_path() -> None:
    """The body goes to endpoint (trailing slash dropped) + /v1/<signal> unchanged, with the
    batch's content type and the configured headers, no User-Agent, no compression; a 200 is
    ok with no items rejected."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            transport = _http(downstream.url + "/", headers={"x-team": "rag"})
            body = traces_request("a", "b")
            assert await transport.send(_batch(body)) == Outcome(True, status="200")
            json_body = b'{"resourceLogs": []}'
            batch = _batch(json_body, CONTENT_JSON, _LOGS)
            assert await transport.send(batch) == Outcome(True, status="200")
            await transport.close()
            (path, headers, seen_body), (json_path, json_headers, seen_json) = downstream.seen
            assert (path, seen_body) == ("/v1/traces", body)
            assert headers["Content-Type"] == CONTENT_PROTOBUF
            assert headers["x-team"] == "rag"
            assert "User-Agent" not in headers
            assert "Content-Encoding" not in headers
            assert (json_path, seen_json) == ("/v1/logs", json_body)
            assert json_headers["Content-Type"] == CONTENT_JSON

    _run(scenario)


def test_http_gzip_compresses_the_body() -> None:
    """compression gzip: the body goes out gzipped with Content-Encoding: gzip."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            transport = _http(downstream.url, compression="gzip")
            body = traces_request("a" * 500)
            assert (await transport.send(_batch(body))).ok
            await transport.close()
            _, headers, seen = downstream.seen[0]
            assert headers["Content-Encoding"] == "gzip"
            assert seen == body  # the server inflates it
            assert int(headers["Content-Length"]) < len(body)

    _run(scenario)


def test_http_partial_success_counts_the_rejected_items() -> None:
    """A 200 whose protobuf body reports a partial success: ok, with the rejected count; a body
    that does not parse, or without partial_success, rejects nothing; a JSON request's answer is
    not read for it."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [
                (200, {}, _partial(2)),
                (202, {}, b"\xff\xff\xff"),
                (200, {}, b"\x28\x01"),  # parses (an unknown field), no partial_success
                (200, {}, _partial(2)),
            ]
            transport = _http(downstream.url)
            assert await transport.send(_batch()) == Outcome(True, status="200", rejected=2)
            assert await transport.send(_batch()) == Outcome(True, status="202")
            assert await transport.send(_batch()) == Outcome(True, status="200")
            json_batch = _batch(b'{"resourceSpans": []}', CONTENT_JSON)
            assert await transport.send(json_batch) == Outcome(True, status="200")
            await transport.close()

    _run(scenario)


def test_http_failures_are_classified_as_the_specification_says() -> None:
    """429/502/503/504 are retryable with the downstream's Retry-After; another 4xx or 5xx is
    not; 300 is not a success."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [
                (429, {"Retry-After": "3"}, b""),
                (502, {}, b""),
                (503, {"Retry-After": "nonsense"}, b""),
                (504, {}, b""),
                (400, {"Retry-After": "3"}, b""),
                (500, {}, b""),
                (300, {}, b""),
            ]
            transport = _http(downstream.url)
            outcomes = [await transport.send(_batch()) for _ in range(7)]
            await transport.close()
            assert outcomes == [
                Outcome(False, retryable=True, retry_after_s=3.0, status="429"),
                Outcome(False, retryable=True, status="502"),
                Outcome(False, retryable=True, status="503"),
                Outcome(False, retryable=True, status="504"),
                Outcome(False, retryable=False, retry_after_s=3.0, status="400"),
                Outcome(False, retryable=False, status="500"),
                Outcome(False, retryable=False, status="300"),
            ]

    _run(scenario)


def test_http_network_problems_are_retryable_never_raised() -> None:
    """Nobody listening: retryable, named by the error; a downstream slower than timeout_s:
    retryable timeout. Neither raises."""

    async def scenario() -> None:
        refused = _http("http://127.0.0.1:9")
        outcome = await refused.send(_batch())
        await refused.close()
        assert (outcome.ok, outcome.retryable) == (False, True)
        assert outcome.status.startswith("ClientConnector")
        async with http_downstream() as downstream:
            downstream.delay_s = 2.0
            slow = _http(downstream.url, timeout_s=0.2)
            started = time.monotonic()
            outcome = await slow.send(_batch())
            assert time.monotonic() - started < 1.5
            await slow.close()
            assert outcome == Outcome(False, retryable=True, status=outcome.status)
            assert "Timeout" in outcome.status

    _run(scenario)


def test_http_close_releases_the_session_and_a_send_reopens_it() -> None:
    """After close the next send opens a new session and gets through; close twice is fine."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            transport = _http(downstream.url)
            await transport.close()
            assert (await transport.send(_batch())).ok
            await transport.close()
            await transport.close()
            assert (await transport.send(_batch())).ok
            await transport.close()
            assert len(downstream.seen) == 2

    _run(scenario)


# --- OTLP/gRPC ------------------------------------------------------------------------------------


@dataclass
class GrpcDownstream:
    """A real OTLP/gRPC server answering from `script` (a status code to abort with, or response
    bytes), then an empty response."""

    port: int = 0
    script: list[Any] = field(default_factory=list)
    seen: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    delay_s: float = 0.0

    def handler(self, method: str) -> Any:
        async def export(request: bytes, context: Any) -> bytes:
            self.seen.append((method, dict(context.invocation_metadata() or ()), request))
            answer = self.script.pop(0) if self.script else b""
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if isinstance(answer, grpc.StatusCode):
                await context.abort(answer, "scripted")
            return bytes(answer)

        return grpc.unary_unary_rpc_method_handler(export)


@asynccontextmanager
async def _grpc_downstream(compression: Any = None) -> AsyncIterator[GrpcDownstream]:
    downstream = GrpcDownstream()
    server = grpc.aio.server(compression=compression)
    services: dict[str, dict[str, Any]] = {}
    for signal in SIGNALS.values():
        service, method = signal.grpc_method.strip("/").split("/")
        services.setdefault(service, {})[method] = downstream.handler(signal.grpc_method)
    for service, methods in services.items():
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, methods),))
    downstream.port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield downstream
    finally:
        await server.stop(None)


def _grpc(target: str, **options: Any) -> GrpcTransport:
    settings: dict[str, Any] = {"secure": False, "headers": {}, "timeout_s": 5,
                                "compression": "none", "ca_file": None, **options}  # fmt: skip
    return GrpcTransport(target, **settings)


def test_grpc_calls_export_with_the_protobuf_bytes_and_metadata() -> None:
    """Each signal's Export method gets the batch's protobuf bytes (a JSON batch encoded), with
    the headers as lower-cased metadata; an empty answer is ok with nothing rejected."""

    async def scenario() -> None:
        async with _grpc_downstream() as downstream:
            transport = _grpc(f"127.0.0.1:{downstream.port}", headers={"X-Team": "rag"})
            body = traces_request("a")
            assert await transport.send(_batch(body)) == Outcome(True, status="OK")
            json_body = b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{}]}]}]}'
            logs = _batch(json_body, CONTENT_JSON, _LOGS)
            assert await transport.send(logs) == Outcome(True, status="OK")
            assert await transport.send(_batch(body)) == Outcome(True, status="OK")
            await transport.close()
            (method, metadata, seen), (logs_method, _, seen_logs), _ = downstream.seen
            assert (method, seen) == (_TRACES.grpc_method, body)
            assert metadata["x-team"] == "rag"
            assert logs_method == _LOGS.grpc_method
            parsed = logs_service_pb2.ExportLogsServiceRequest()
            parsed.ParseFromString(seen_logs)
            assert len(parsed.resource_logs[0].scope_logs[0].log_records) == 1

    _run(scenario)


def test_grpc_partial_success_and_status_codes_are_classified() -> None:
    """A partial success counts its rejected spans; UNAVAILABLE, RESOURCE_EXHAUSTED and the
    other retryable codes are retryable, INVALID_ARGUMENT and PERMISSION_DENIED are not."""

    async def scenario() -> None:
        async with _grpc_downstream() as downstream:
            names = "UNAVAILABLE RESOURCE_EXHAUSTED ABORTED OUT_OF_RANGE DATA_LOSS CANCELLED "
            names += "DEADLINE_EXCEEDED INVALID_ARGUMENT PERMISSION_DENIED"
            codes = [grpc.StatusCode[name] for name in names.split()]
            downstream.script = [_partial(3), *codes]
            transport = _grpc(f"127.0.0.1:{downstream.port}")
            assert await transport.send(_batch()) == Outcome(True, status="OK", rejected=3)
            outcomes = [await transport.send(_batch()) for _ in codes]
            await transport.close()
            assert outcomes == [
                Outcome(False, retryable=code.name not in ("INVALID_ARGUMENT", "PERMISSION_DENIED"),
                        status=code.name)
                for code in codes
            ]  # fmt: skip

    _run(scenario)


def test_grpc_gzip_and_an_unreachable_target() -> None:
    """compression gzip still gets through (the server takes gzip); nobody listening is a
    retryable UNAVAILABLE within the timeout, never raised."""

    async def scenario() -> None:
        async with _grpc_downstream() as downstream:
            transport = _grpc(f"127.0.0.1:{downstream.port}", compression="gzip")
            assert (await transport.send(_batch(traces_request("z" * 300)))).ok
            await transport.close()
            assert downstream.seen[0][2] == traces_request("z" * 300)
            assert downstream.seen[0][1].get("grpc-accept-encoding", "gzip").find("gzip") >= 0
        unreachable = _grpc("127.0.0.1:9", timeout_s=2)
        outcome = await unreachable.send(_batch())
        await unreachable.close()
        assert outcome == Outcome(False, retryable=True, status="UNAVAILABLE")

    _run(scenario)


def test_grpc_timeout_is_deadline_exceeded_and_retryable() -> None:
    """A downstream slower than timeout_s: DEADLINE_EXCEEDED, retryable, within the timeout."""

    async def scenario() -> None:
        async with _grpc_downstream() as downstream:
            downstream.delay_s = 2.0
            transport = _grpc(f"127.0.0.1:{downstream.port}", timeout_s=0.3)
            started = time.monotonic()
            outcome = await transport.send(_batch())
            assert time.monotonic() - started < 1.5
            await transport.close()
            assert outcome == Outcome(False, retryable=True, status="DEADLINE_EXCEEDED")

    _run(scenario)


def test_grpc_close_lets_a_new_channel_open() -> None:
    """After close the next send opens a new channel (calls are made again) and gets through."""

    async def scenario() -> None:
        async with _grpc_downstream() as downstream:
            transport = _grpc(f"127.0.0.1:{downstream.port}")
            await transport.close()
            assert (await transport.send(_batch())).ok
            await transport.close()
            assert (await transport.send(_batch())).ok
            await transport.close()
            assert len(downstream.seen) == 2

    _run(scenario)


@pytest.mark.parametrize("secure", [True])
def test_grpc_secure_without_tls_on_the_downstream_fails_retryably(secure: bool) -> None:
    """secure=True against a plain-text downstream: the handshake fails, UNAVAILABLE, never
    raised."""

    async def scenario() -> None:
        async with _grpc_downstream() as downstream:
            transport = _grpc(f"127.0.0.1:{downstream.port}", secure=secure, timeout_s=2)
            outcome = await transport.send(_batch())
            await transport.close()
            assert outcome == Outcome(False, retryable=True, status="UNAVAILABLE")
            assert downstream.seen == []

    _run(scenario)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it."""
    return make_certificates(tmp_path_factory.mktemp("tls"))


def _server_context(certificates: dict[str, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificates["server.pem"], certificates["server.key"])
    return context


def test_http_over_tls_trusts_the_ca_file(certificates: dict[str, Path]) -> None:
    """An https downstream whose certificate the CA file signed is reached; without the CA
    file (the system's trust) the handshake fails: retryable, never raised."""

    async def scenario() -> None:
        async with http_downstream(_server_context(certificates)) as downstream:
            trusted = _http(downstream.url, ca_file=str(certificates["ca.pem"]))
            assert await trusted.send(_batch()) == Outcome(True, status="200")
            await trusted.close()
            untrusted = _http(downstream.url)
            outcome = await untrusted.send(_batch())
            await untrusted.close()
            assert (outcome.ok, outcome.retryable) == (False, True)
            assert "Certificate" in outcome.status
            assert len(downstream.seen) == 1

    _run(scenario)


def test_grpc_over_tls_trusts_the_ca_file(certificates: dict[str, Path]) -> None:
    """secure with the CA file reaches a TLS downstream whose certificate it signed; secure
    without it (the system's trust) does not: UNAVAILABLE, retryable."""

    async def scenario() -> None:
        pair = (certificates["server.key"].read_bytes(), certificates["server.pem"].read_bytes())
        server = grpc.aio.server()
        downstream = GrpcDownstream()
        method = _TRACES.grpc_method
        service, name = method.strip("/").split("/")
        handlers = {name: downstream.handler(method)}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
        port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([pair]))
        await server.start()
        try:
            ca = str(certificates["ca.pem"])
            trusted = _grpc(f"127.0.0.1:{port}", secure=True, ca_file=ca)
            assert await trusted.send(_batch()) == Outcome(True, status="OK")
            await trusted.close()
            untrusted = _grpc(f"127.0.0.1:{port}", secure=True, timeout_s=2)
            outcome = await untrusted.send(_batch())
            await untrusted.close()
            assert outcome == Outcome(False, retryable=True, status="UNAVAILABLE")
            assert len(downstream.seen) == 1
        finally:
            await server.stop(None)

    _run(scenario)


def test_http_sends_in_parallel_on_one_transport() -> None:
    """Three sends at once to a downstream taking 0.5 s each overlap (the connection pool is not
    limited to one), all ok."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.delay_s = 0.5
            transport = _http(downstream.url)
            started = time.monotonic()
            outcomes = await asyncio.gather(*(transport.send(_batch()) for _ in range(3)))
            elapsed = time.monotonic() - started
            await transport.close()
            assert all(outcome.ok for outcome in outcomes)
            assert elapsed < 1.0

    _run(scenario)


def test_http_reads_a_compressed_answer() -> None:
    """A gzip-encoded partial-success answer is decompressed before it is read."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.script = [(200, {"Content-Encoding": "gzip"}, gzip.compress(_partial(4)))]
            transport = _http(downstream.url)
            assert await transport.send(_batch()) == Outcome(True, status="200", rejected=4)
            await transport.close()

    _run(scenario)


@asynccontextmanager
async def _counting_proxy(port: int) -> AsyncIterator[tuple[int, list[int]]]:
    """A TCP relay on 127.0.0.1 to `port`; yields its port and the bytes it carried upstream
    (client to server) so far, in a one-item list."""
    carried = [0]

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, up: bool) -> None:
        try:
            while data := await reader.read(65536):
                if up:
                    carried[0] += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def relay(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        server_r, server_w = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.gather(pipe(client_r, server_w, True), pipe(server_r, client_w, False))

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1], carried
    finally:
        server.close()


def test_grpc_gzip_compresses_the_request_on_the_wire() -> None:
    """compression gzip: a 200 kB compressible request crosses the wire in a few kB; without
    it, in full. The downstream gets the same bytes either way."""

    async def scenario() -> None:
        body = traces_request("z" * 200_000)
        sizes = {}
        async with _grpc_downstream() as downstream:
            for compression in ("gzip", "none"):
                async with _counting_proxy(downstream.port) as (port, carried):
                    transport = _grpc(f"127.0.0.1:{port}", compression=compression)
                    assert (await transport.send(_batch(body))).ok
                    await transport.close()
                    sizes[compression] = carried[0]
            assert [seen for _, _, seen in downstream.seen] == [body, body]
        assert sizes["gzip"] < 20_000
        assert sizes["none"] > 200_000

    _run(scenario)


def test_grpc_gzip_compresses_over_tls_too(certificates: dict[str, Path]) -> None:
    """compression gzip on a secure channel: the request crosses the wire compressed (TLS
    bytes counted by a TCP relay) and arrives whole."""

    async def scenario() -> None:
        pair = (certificates["server.key"].read_bytes(), certificates["server.pem"].read_bytes())
        server = grpc.aio.server()
        downstream = GrpcDownstream()
        method = _TRACES.grpc_method
        service, name = method.strip("/").split("/")
        handlers = {name: downstream.handler(method)}
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service, handlers),))
        port = server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([pair]))
        await server.start()
        body = traces_request("z" * 200_000)
        try:
            async with _counting_proxy(port) as (relay, carried):
                transport = _grpc(f"127.0.0.1:{relay}", secure=True, compression="gzip",
                                  ca_file=str(certificates["ca.pem"]))  # fmt: skip
                assert (await transport.send(_batch(body))).ok
                await transport.close()
                assert carried[0] < 20_000
            assert downstream.seen[0][2] == body
        finally:
            await server.stop(None)

    _run(scenario)


def test_grpc_a_ca_file_that_cannot_be_read_is_a_retryable_outcome(tmp_path: Path) -> None:
    """A CA file gone since start: the send is a retryable failure named by the error, never
    raised."""

    async def scenario() -> None:
        transport = _grpc("127.0.0.1:9", secure=True, ca_file=str(tmp_path / "gone.pem"))
        outcome = await transport.send(_batch())
        await transport.close()
        assert outcome == Outcome(False, retryable=True, status="FileNotFoundError")

    _run(scenario)


def test_http_has_no_connection_limit() -> None:
    """110 sends at once to a downstream taking 1 s each all overlap: the connection pool has
    no limit (aiohttp's default of 100 would hold the last ten back a second)."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            downstream.delay_s = 1.0
            transport = _http(downstream.url)
            started = time.monotonic()
            outcomes = await asyncio.gather(*(transport.send(_batch()) for _ in range(110)))
            elapsed = time.monotonic() - started
            await transport.close()
            assert all(outcome.ok for outcome in outcomes)
            assert elapsed < 1.9

    _run(scenario)


def test_http_keeps_a_path_in_the_endpoint() -> None:
    """An endpoint with a path (and a trailing slash) posts below that path: only slashes are
    trimmed from its end."""

    async def scenario() -> None:
        async with http_downstream() as downstream:
            transport = _http(downstream.url + "/otlpX/")
            assert (await transport.send(_batch())).ok
            await transport.close()
            assert downstream.seen[0][0] == "/otlpX/v1/traces"

    _run(scenario)
