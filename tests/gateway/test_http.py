"""The OTLP/HTTP receiver in-process: the real aiohttp application of `build_app` on 127.0.0.1,
fed by a real intake (a `Forwarder` that is not started, so accepted requests stay buffered),
asked by a real aiohttp client. Every answer the module promises: 200 in the request's encoding,
400/413/415/503/401 with a `google.rpc.Status` saying why, the refusal counters, the health
paths. Each test starts its own server (milliseconds), so mutation runs stay fast."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from google.rpc import status_pb2  # type: ignore[import-untyped]
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from prometheus_client import CONTENT_TYPE_LATEST
from tests.gateway._scripted import traces_request

from groundwire.gateway import load_config
from groundwire.gateway._forwarder import Forwarder
from groundwire.gateway._http import build_app, token_matches
from groundwire.gateway._intake import Intake
from groundwire.gateway._metrics import GatewayMetrics
from groundwire.gateway._queue import DiskQueue
from groundwire.gateway._signals import CONTENT_JSON, CONTENT_PROTOBUF
from groundwire.gateway._transport import HttpTransport

_PROTO = {"Content-Type": CONTENT_PROTOBUF}
_JSON = {"Content-Type": CONTENT_JSON}


@dataclass
class Served:
    """A running receiver: its base URL, intake and a client session."""

    url: str
    intake: Intake
    session: aiohttp.ClientSession

    def counts(self) -> dict[str, int]:
        """The gateway's tallies so far."""
        return self.intake.metrics.snapshot()


@asynccontextmanager
async def _served(
    *,
    health: Callable[[], dict[str, Any]] = lambda: {"status": "ok"},
    ready: Callable[[], bool] = lambda: True,
    queue: DiskQueue | None = None,
    **flags: Any,
) -> AsyncIterator[Served]:
    """The receiver of a gateway configured by `flags` (storing requests in `queue` first when
    given), on a free port of 127.0.0.1."""
    config = load_config(flags={"forward": "http://127.0.0.1:9", **flags}, environ={})
    metrics = GatewayMetrics(None)
    transport = HttpTransport(
        "http://127.0.0.1:9", headers={}, timeout_s=1, compression="none", ca_file=None
    )
    intake = Intake(Forwarder(transport, metrics, config, store=queue), None, metrics, queue)
    runner = web.AppRunner(build_app(intake, config, health=health, ready=ready))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    async with aiohttp.ClientSession(auto_decompress=False) as session:
        try:
            yield Served(f"http://127.0.0.1:{port}", intake, session)
        finally:
            await runner.cleanup()


def _run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


async def _post(
    served: Served, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of one POST."""
    async with served.session.post(served.url + path, data=body, headers=headers) as response:
        return response.status, dict(response.headers), await response.read()


def _status_of(body: bytes, content_type: str) -> tuple[int, str]:
    """(code, message) of a `google.rpc.Status` answer in `content_type`."""
    if content_type == CONTENT_PROTOBUF:
        status = status_pb2.Status()
        status.ParseFromString(body)
        return int(status.code), str(status.message)
    loaded = json.loads(body)
    assert set(loaded) == {"code", "message"}
    return int(loaded["code"]), str(loaded["message"])


def test_an_accepted_request_is_answered_in_its_own_encoding() -> None:
    """Protobuf gets an empty serialised response, JSON an empty JSON object, both 200 with the
    request's content type; the items are counted and the bytes buffered as received."""

    async def scenario() -> None:
        async with _served() as served:
            status, headers, body = await _post(
                served, "/v1/traces", traces_request("a", "b"), _PROTO
            )
            assert (status, body) == (200, b"")
            assert headers["Content-Type"] == CONTENT_PROTOBUF
            json_body = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "c"}]}]}]}'
            status, headers, body = await _post(served, "/v1/traces", json_body, _JSON)
            assert (status, body) == (200, b"{}")
            assert headers["Content-Type"] == CONTENT_JSON
            assert served.counts() == {"received:traces": 3}
            assert served.intake.forwarder.buffered_bytes == len(traces_request("a", "b")) + len(
                json_body
            )

    _run(scenario)


def test_each_signal_has_its_own_path_and_response_type() -> None:
    """/v1/logs answers with the logs response type and counts under logs (not traces)."""

    async def scenario() -> None:
        async with _served() as served:
            request = logs_service_pb2.ExportLogsServiceRequest()
            request.resource_logs.add().scope_logs.add().log_records.add()
            status, _, body = await _post(served, "/v1/logs", request.SerializeToString(), _PROTO)
            assert status == 200
            logs_service_pb2.ExportLogsServiceResponse().ParseFromString(body)
            assert served.counts() == {"received:logs": 1}
            status, _, _ = await _post(served, "/v1/nothing", b"", _PROTO)
            assert status == 404

    _run(scenario)


def test_compressed_bodies_are_read_decompressed() -> None:
    """gzip (any case, with spaces) and deflate bodies are decoded before the intake sees them:
    the buffer holds the decompressed bytes."""

    async def scenario() -> None:
        async with _served() as served:
            body = traces_request("x")
            for encoding in (" GZip ", "identity", "gzip"):
                data = gzip.compress(body) if "gz" in encoding.lower() else body
                headers = {**_PROTO, "Content-Encoding": encoding}
                status, _, _ = await _post(served, "/v1/traces", data, headers)
                assert status == 200, encoding
            assert served.intake.forwarder.buffered_bytes == 3 * len(body)
            assert served.counts() == {"received:traces": 3}

    _run(scenario)


def test_an_unsupported_content_type_is_415_in_json() -> None:
    """Another Content-Type: 415 with an INVALID_ARGUMENT status in JSON naming both accepted
    types, counted as unsupported_media_type; nothing buffered."""

    async def scenario() -> None:
        async with _served() as served:
            status, headers, body = await _post(
                served, "/v1/traces", b"x", {"Content-Type": "text/plain"}
            )
            assert status == 415
            assert headers["Content-Type"] == CONTENT_JSON
            assert _status_of(body, CONTENT_JSON) == (
                3,
                f"unsupported Content-Type 'text/plain'; OTLP/HTTP takes {CONTENT_PROTOBUF} "
                f"or {CONTENT_JSON}",
            )
            assert served.counts() == {"refused:traces:unsupported_media_type": 1}
            assert served.intake.forwarder.buffered_requests == 0

    _run(scenario)


def test_an_unsupported_content_encoding_is_415_in_the_request_encoding() -> None:
    """Content-Encoding snappy: 415 with the status in protobuf (the request's encoding), the
    encoding named lower-cased."""

    async def scenario() -> None:
        async with _served() as served:
            headers = {**_PROTO, "Content-Encoding": " Snappy "}
            status, answer_headers, body = await _post(served, "/v1/traces", b"x", headers)
            assert status == 415
            assert answer_headers["Content-Type"] == CONTENT_PROTOBUF
            assert _status_of(body, CONTENT_PROTOBUF) == (
                3,
                "unsupported Content-Encoding 'snappy'; use gzip, deflate or none",
            )
            assert served.counts() == {"refused:traces:unsupported_media_type": 1}

    _run(scenario)


def test_a_body_over_the_limit_is_413_resource_exhausted() -> None:
    """A declared length over max_request_bytes, and a small gzip body that inflates past it,
    are both 413 with RESOURCE_EXHAUSTED naming the limit; a body of exactly the limit passes."""

    async def scenario() -> None:
        async with _served(max_request_bytes=64) as served:
            message = (
                "request body over the gateway's limit of 64 bytes (max_request_bytes); "
                "send smaller batches"
            )
            status, headers, body = await _post(served, "/v1/traces", b"\0" * 65, _PROTO)
            assert (status, _status_of(body, CONTENT_PROTOBUF)) == (413, (8, message))
            assert headers["Content-Type"] == CONTENT_PROTOBUF
            bomb = gzip.compress(b"\0" * 4096)
            assert len(bomb) < 64
            gz = {**_JSON, "Content-Encoding": "gzip"}
            status, _, body = await _post(served, "/v1/traces", bomb, gz)
            assert (status, _status_of(body, CONTENT_JSON)) == (413, (8, message))
            exact = traces_request("n" * 56)
            assert len(exact) == 64
            status, _, _ = await _post(served, "/v1/traces", exact, _PROTO)
            assert status == 200
            assert served.counts() == {"refused:traces:too_large": 2, "received:traces": 1}

    _run(scenario)


def test_a_corrupt_compressed_body_is_400_naming_the_encoding() -> None:
    """A body that is not the deflate stream it claims cannot be read: 400 INVALID_ARGUMENT
    asking whether it is really deflate, counted as malformed."""

    async def scenario() -> None:
        async with _served() as served:
            headers = {**_PROTO, "Content-Encoding": "deflate"}
            status, _, body = await _post(served, "/v1/traces", b"not deflate at all", headers)
            assert status == 400
            code, message = _status_of(body, CONTENT_PROTOBUF)
            assert code == 3
            assert message.startswith("the request body could not be read (")
            assert message.endswith("): is it really deflate?")
            assert served.counts() == {"refused:traces:malformed": 1}

    _run(scenario)


def test_a_malformed_body_is_400_with_the_decoders_message() -> None:
    """A body that does not decode: 400 INVALID_ARGUMENT with the intake's message, no
    Retry-After."""

    async def scenario() -> None:
        async with _served() as served:
            status, headers, body = await _post(served, "/v1/traces", b"{nope", _JSON)
            assert status == 400
            assert "Retry-After" not in headers
            code, message = _status_of(body, CONTENT_JSON)
            assert code == 3
            assert message.startswith("not valid JSON: ")
            assert served.counts() == {"refused:traces:malformed": 1}

    _run(scenario)


def test_a_full_buffer_is_503_unavailable_with_retry_after() -> None:
    """Once the forward buffer holds a request, the next that does not fit is 503 UNAVAILABLE
    with Retry-After 1 (the gate is open) and the intake's message."""

    async def scenario() -> None:
        body = traces_request("a" * 40)
        async with _served(max_request_bytes=len(body), buffer_max_bytes=len(body)) as served:
            assert (await _post(served, "/v1/traces", body, _PROTO))[0] == 200
            status, headers, answer = await _post(served, "/v1/traces", body, _PROTO)
            assert status == 503
            assert headers["Retry-After"] == "1"
            assert _status_of(answer, CONTENT_PROTOBUF) == (
                14,
                "the gateway's forward buffer is full (downstream slow or down); retry later",
            )
            assert served.counts() == {"received:traces": 1, "refused:traces:buffer_full": 1}

    _run(scenario)


def test_health_ready_and_metrics_paths() -> None:
    """/healthz serves the health callable as JSON; /readyz 200 or 503 as `ready` says;
    /metrics the Prometheus text with its content type."""
    state = {"ready": True}

    async def scenario() -> None:
        async with _served(
            health=lambda: {"status": "ok", "n": 7}, ready=lambda: state["ready"]
        ) as served:
            async with served.session.get(served.url + "/healthz") as response:
                assert response.status == 200
                assert await response.json() == {"status": "ok", "n": 7}
            async with served.session.get(served.url + "/readyz") as response:
                assert (response.status, await response.json()) == (200, {"ready": True})
            state["ready"] = False
            async with served.session.get(served.url + "/readyz") as response:
                assert (response.status, await response.json()) == (503, {"ready": False})
            async with served.session.get(served.url + "/metrics") as response:
                assert response.status == 200
                assert response.headers["Content-Type"] == CONTENT_TYPE_LATEST
                assert b"# HELP " in await response.read()

    _run(scenario)


def test_a_token_guards_the_signal_paths_but_not_health() -> None:
    """With auth_token: no or a wrong bearer token is 401 UNAUTHENTICATED with
    WWW-Authenticate: Bearer, counted per signal; the right one passes; health paths need none;
    an unknown path is 401 too but counted nowhere."""

    async def scenario() -> None:
        async with _served(auth_token="s3cret") as served:
            status, headers, body = await _post(served, "/v1/traces", traces_request("a"), _PROTO)
            assert status == 401
            assert headers["WWW-Authenticate"] == "Bearer"
            assert headers["Content-Type"] == CONTENT_PROTOBUF
            assert _status_of(body, CONTENT_PROTOBUF) == (
                16,
                "missing or wrong credentials in the 'authorization' header",
            )
            wrong = {**_JSON, "Authorization": "Bearer nope"}
            status, headers, body = await _post(served, "/v1/logs", b"{}", wrong)
            assert status == 401
            assert headers["Content-Type"] == CONTENT_JSON
            assert _status_of(body, CONTENT_JSON)[0] == 16
            status, _, _ = await _post(served, "/v1/other", b"{}", _JSON)
            assert status == 401
            right = {**_PROTO, "Authorization": "bearer s3cret"}
            assert (await _post(served, "/v1/traces", traces_request("a"), right))[0] == 200
            for path in ("/healthz", "/readyz"):
                async with served.session.get(served.url + path) as response:
                    assert response.status == 200, path
            async with served.session.get(served.url + "/metrics") as response:
                assert response.status == 401
            assert served.counts() == {
                "refused:traces:unauthenticated": 1,
                "refused:logs:unauthenticated": 1,
                "received:traces": 1,
            }

    _run(scenario)


def test_a_token_in_another_header_is_its_plain_value() -> None:
    """With auth_header x-api-key the header carries the bare token (no Bearer scheme), and a
    401 has no WWW-Authenticate; a non-protobuf request gets its status in JSON."""

    async def scenario() -> None:
        async with _served(auth_token="k", auth_header="x-api-key") as served:
            ok = {**_PROTO, "X-Api-Key": " k "}
            assert (await _post(served, "/v1/traces", traces_request("a"), ok))[0] == 200
            bearer = {**_PROTO, "X-Api-Key": "Bearer k"}
            status, headers, body = await _post(served, "/v1/traces", traces_request("a"), bearer)
            assert status == 401
            assert "WWW-Authenticate" not in headers
            assert _status_of(body, CONTENT_PROTOBUF) == (
                16,
                "missing or wrong credentials in the 'x-api-key' header",
            )
            odd = {"Content-Type": "text/plain"}
            status, headers, body = await _post(served, "/v1/traces", b"x", odd)
            assert (status, headers["Content-Type"]) == (401, CONTENT_JSON)
            assert _status_of(body, CONTENT_JSON)[0] == 16

    _run(scenario)


def test_token_matches_rules() -> None:
    """The token check: absent is False; `authorization` needs the Bearer scheme (any case) and
    compares the rest stripped; another header compares its whole stripped value."""
    assert not token_matches(None, "t", "authorization")
    assert token_matches("Bearer t", "t", "Authorization")
    assert token_matches("BEARER  t ", "t", "authorization")
    assert not token_matches("Basic t", "t", "authorization")
    assert not token_matches("t", "t", "authorization")
    assert not token_matches("Bearer u", "t", "authorization")
    assert token_matches(" t ", "t", "x-token")
    assert not token_matches("Bearer t", "t", "x-token")


def test_without_prometheus_client_metrics_is_404_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the prometheus extra (`prometheus_client` not importable), /metrics is 404 with a
    line naming the extra to install; the other paths still answer."""
    monkeypatch.setitem(sys.modules, "prometheus_client", None)

    async def scenario() -> None:
        async with _served() as served:
            async with served.session.get(served.url + "/metrics") as response:
                assert response.status == 404
                assert await response.text() == "install groundwire[prometheus] for /metrics\n"
            async with served.session.get(served.url + "/healthz") as response:
                assert response.status == 200

    _run(scenario)


def test_a_chunked_body_without_a_declared_length_is_read() -> None:
    """A request streamed in chunks (no Content-Length) is read and accepted: only a declared
    length is checked before reading."""

    async def chunks() -> AsyncIterator[bytes]:
        body = traces_request("a", "b")
        yield body[:5]
        yield body[5:]

    async def scenario() -> None:
        async with _served() as served:
            status, _ = await _post_stream(served, chunks())
            assert status == 200
            assert served.counts() == {"received:traces": 2}

    _run(scenario)


async def _post_stream(served: Served, data: AsyncIterator[bytes]) -> tuple[int, bytes]:
    """Status and body of a POST streamed in chunks (Transfer-Encoding: chunked)."""
    async with served.session.post(served.url + "/v1/traces", data=data, headers=_PROTO) as answer:
        assert answer.request_info.headers.get("Transfer-Encoding") == "chunked"
        return answer.status, await answer.read()


def test_an_inflated_protobuf_request_is_refused_in_protobuf() -> None:
    """A small gzip protobuf body that inflates past max_request_bytes: 413 with the status in
    protobuf, the request's encoding."""

    async def scenario() -> None:
        async with _served(max_request_bytes=64) as served:
            bomb = gzip.compress(b"\0" * 4096)
            headers = {**_PROTO, "Content-Encoding": "gzip"}
            status, answer_headers, body = await _post(served, "/v1/traces", bomb, headers)
            assert status == 413
            assert answer_headers["Content-Type"] == CONTENT_PROTOBUF
            assert _status_of(body, CONTENT_PROTOBUF)[0] == 8

    _run(scenario)


def test_an_unreadable_body_names_the_reading_error() -> None:
    """The 400 for a body that cannot be decompressed names the error aiohttp raised, in the
    request's encoding (protobuf here)."""

    async def scenario() -> None:
        async with _served() as served:
            headers = {**_PROTO, "Content-Encoding": "deflate"}
            status, answer_headers, body = await _post(served, "/v1/traces", b"nope", headers)
            assert (status, answer_headers["Content-Type"]) == (400, CONTENT_PROTOBUF)
            assert _status_of(body, CONTENT_PROTOBUF) == (
                3,
                "the request body could not be read (RequestPayloadError): is it really deflate?",
            )

    _run(scenario)


def test_a_malformed_protobuf_body_is_answered_in_protobuf() -> None:
    """A protobuf body that does not decode: 400 with an INVALID_ARGUMENT status in protobuf."""

    async def scenario() -> None:
        async with _served() as served:
            status, headers, body = await _post(served, "/v1/traces", b"\xff\xff\xff", _PROTO)
            assert (status, headers["Content-Type"]) == (400, CONTENT_PROTOBUF)
            code, message = _status_of(body, CONTENT_PROTOBUF)
            assert code == 3
            assert message.startswith("not a valid OTLP protobuf traces request: ")

    _run(scenario)


def test_a_queue_that_cannot_store_is_503_with_its_own_retry_after(tmp_path: Path) -> None:
    """With a persistent queue that has no room on its disk: 503 UNAVAILABLE with the queue's
    Retry-After of 5 s (not the buffer's 1 s), counted as queue_unavailable."""

    async def scenario() -> None:
        queue = DiskQueue(tmp_path, fsync=False, reserve_bytes=1 << 62)
        try:
            async with _served(queue=queue) as served:
                status, headers, body = await _post(
                    served, "/v1/traces", traces_request("a"), _PROTO
                )
                assert (status, headers["Retry-After"]) == (503, "5")
                code, message = _status_of(body, CONTENT_PROTOBUF)
                assert code == 14
                assert message.endswith("; retry later")
                assert served.counts() == {"refused:traces:queue_unavailable": 1}
        finally:
            queue.close()

    _run(scenario)
