"""What the forwarder sends: `Batch` (one received request), and the OTLP/HTTP and OTLP/gRPC
transports that make one downstream attempt at it and classify the answer (`Outcome`) as the OTLP
specification says: retryable (connection error, timeout, 429/502/503/504 or the gRPC
equivalents, with the downstream's Retry-After) or not, and how many items a partial success
rejected. A transport never raises for a network or protocol problem.
"""

from __future__ import annotations

import email.utils
import gzip
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from groundwire.gateway._signals import CONTENT_PROTOBUF, Signal

__all__ = ["Batch", "GrpcTransport", "HttpTransport", "Outcome", "Transport", "retry_after_seconds"]

_RETRYABLE_HTTP: Final = frozenset({429, 502, 503, 504})
"""The statuses the OTLP specification names as retryable."""
_RETRYABLE_GRPC: Final = frozenset(
    {"CANCELLED", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED", "OUT_OF_RANGE",
     "UNAVAILABLE", "DATA_LOSS"}
)  # fmt: skip
_MAX_RETRY_AFTER_S: Final = 300.0


@dataclass(eq=False, slots=True)
class Batch:
    """One received request, held until downstream acknowledges it."""

    signal: Signal
    body: bytes
    """The body as received (decompressed)."""
    content_type: str
    """`application/x-protobuf` or `application/json`."""
    items: int
    """Spans, data points or log records in it."""
    message: Any = None
    """The decoded message of a JSON body, until `protobuf` has encoded it."""
    received: float = field(default_factory=time.monotonic)
    attempts: int = 0
    encoded: bytes | None = None
    """A JSON body's protobuf encoding, made once by the first `protobuf` call."""
    seqs: tuple[int, ...] = ()
    """Its rows in the persistent queue (several for a merged batch; none without a queue)."""

    @property
    def size(self) -> int:
        """Bytes it holds in the buffer."""
        return len(self.body)

    def protobuf(self) -> bytes:
        """The request as binary protobuf: the body when it came so; for a JSON body its one
        encoding (made on first use, for a gRPC downstream or the scoring process, and kept:
        a retry or a second reader does not encode it again)."""
        if self.content_type == CONTENT_PROTOBUF:
            return self.body
        if self.encoded is None:
            self.encoded = bytes(self.message.SerializeToString())
            self.message = None
        return self.encoded


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one downstream attempt came to."""

    ok: bool
    retryable: bool = False
    retry_after_s: float | None = None
    status: str = ""
    """The HTTP status or gRPC code, for logs."""
    rejected: int = 0
    """Items the downstream reported as rejected in a partial success."""


class Transport(Protocol):
    """Sends one batch downstream."""

    async def send(self, batch: Batch) -> Outcome:
        """One attempt; never raises for a network or protocol problem."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header (delay-seconds or HTTP-date) in seconds; None when absent or bad."""
    if not value:
        return None
    value = value.strip()
    if value.isdecimal():
        return min(float(value), _MAX_RETRY_AFTER_S)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return min(max(0.0, when.timestamp() - time.time()), _MAX_RETRY_AFTER_S)


def _rejected(signal: Signal, payload: bytes) -> int:
    """Items a downstream's partial-success response rejected (0 when it says nothing)."""
    if not payload:
        return 0
    response = signal.response_type()
    try:
        response.ParseFromString(payload)
    except Exception:
        return 0
    if not response.HasField("partial_success"):
        return 0
    return int(getattr(response.partial_success, signal.rejected_field))


class HttpTransport:
    """OTLP/HTTP to `endpoint` + `/v1/<signal>`, with aiohttp; bodies as they were received."""

    def __init__(
        self,
        endpoint: str,
        *,
        headers: Mapping[str, str],
        timeout_s: float,
        compression: str,
        ca_file: str | None,
    ) -> None:
        """Set where and how to post; the session is created on first use (inside the loop)."""
        self._base = endpoint.rstrip("/")
        self._headers = dict(headers)
        self._timeout_s = timeout_s
        self._gzip = compression == "gzip"
        self._ca_file = ca_file
        self._session: Any = None

    def _open(self) -> Any:
        import aiohttp

        ssl: Any = None
        if self._ca_file:
            import ssl as ssl_module

            ssl = ssl_module.create_default_context(cafile=self._ca_file)
        connector = aiohttp.TCPConnector(limit=0, ssl=ssl if ssl is not None else True)
        return aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=self._timeout_s),
            auto_decompress=True,
            skip_auto_headers=("User-Agent",),
        )

    async def send(self, batch: Batch) -> Outcome:
        """Post the batch; classify the answer as the OTLP specification says."""
        import aiohttp

        if self._session is None:
            self._session = self._open()
        headers = {**self._headers, "Content-Type": batch.content_type}
        body = batch.body
        if self._gzip:
            body = gzip.compress(body, compresslevel=1)
            headers["Content-Encoding"] = "gzip"
        try:
            async with self._session.post(
                self._base + batch.signal.path, data=body, headers=headers
            ) as response:
                payload = await response.read()
                status = response.status
                if 200 <= status < 300:
                    rejected = (
                        _rejected(batch.signal, payload)
                        if batch.content_type == CONTENT_PROTOBUF
                        else 0
                    )
                    return Outcome(True, status=str(status), rejected=rejected)
                return Outcome(
                    False,
                    retryable=status in _RETRYABLE_HTTP,
                    retry_after_s=retry_after_seconds(response.headers.get("Retry-After")),
                    status=str(status),
                )
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            return Outcome(False, retryable=True, status=type(error).__name__)

    async def close(self) -> None:
        """Close the client session."""
        if self._session is not None:
            await self._session.close()
            self._session = None


class GrpcTransport:
    """OTLP/gRPC to `host:port`; protobuf bodies go out as received, without re-encoding."""

    def __init__(
        self,
        target: str,
        *,
        secure: bool,
        headers: Mapping[str, str],
        timeout_s: float,
        compression: str,
        ca_file: str | None,
    ) -> None:
        """Set where and how to call; the channel is created on first use (inside the loop)."""
        self._target = target
        self._secure = secure
        self._metadata = tuple((key.lower(), value) for key, value in headers.items())
        self._timeout_s = timeout_s
        self._compression = compression
        self._ca_file = ca_file
        self._channel: Any = None
        self._calls: dict[str, Any] = {}

    def _call(self, signal: Signal) -> Any:
        import grpc  # type: ignore[import-untyped]

        if self._channel is None:
            compression = grpc.Compression.Gzip if self._compression == "gzip" else None
            if self._secure:
                root = open(self._ca_file, "rb").read() if self._ca_file else None  # noqa: SIM115
                credentials = grpc.ssl_channel_credentials(root_certificates=root)
                self._channel = grpc.aio.secure_channel(
                    self._target, credentials, compression=compression
                )
            else:
                self._channel = grpc.aio.insecure_channel(self._target, compression=compression)
        call = self._calls.get(signal.name)
        if call is None:
            call = self._channel.unary_unary(
                signal.grpc_method,
                request_serializer=None,
                response_deserializer=None,
            )
            self._calls[signal.name] = call
        return call

    async def send(self, batch: Batch) -> Outcome:
        """Call Export with the batch's protobuf bytes; classify the status code."""
        import grpc

        try:
            payload = await self._call(batch.signal)(
                batch.protobuf(), timeout=self._timeout_s, metadata=self._metadata
            )
        except grpc.aio.AioRpcError as error:
            code = error.code().name
            return Outcome(False, retryable=code in _RETRYABLE_GRPC, status=code)
        except (TimeoutError, OSError) as error:
            return Outcome(False, retryable=True, status=type(error).__name__)
        return Outcome(True, status="OK", rejected=_rejected(batch.signal, payload or b""))

    async def close(self) -> None:
        """Close the channel (and forget its calls: a later send opens a new one)."""
        if self._channel is not None:
            await self._channel.close()
            self._channel = None
            self._calls.clear()
