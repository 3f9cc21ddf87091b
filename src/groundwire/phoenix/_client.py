"""A small Phoenix REST client over httpx: span pages, annotation posts, retries, rate limit.

Plain HTTP against the REST API Phoenix documents (its `/openapi.json` is the reference), so
groundwire does not depend on the `arize-phoenix` package. `PHOENIX_API_KEY` (when set) is sent
as a bearer token. Connection errors, 429 and 5xx answers are retried with exponential backoff
(a 429's `Retry-After` is honoured); requests are spaced by `min_interval_s` (a client-side rate
limit). What cannot be done raises a `PhoenixError` subclass naming the URL and the answer.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import quote

try:
    import httpx
except ImportError as _error:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "groundwire.phoenix needs httpx: pip install 'groundwire[phoenix]'"
    ) from _error

__all__ = [
    "ENV_API_KEY",
    "PhoenixClient",
    "PhoenixError",
    "PhoenixNotFoundError",
    "PhoenixUnavailableError",
    "SpanPage",
]

ENV_API_KEY: Final = "PHOENIX_API_KEY"
"""Environment variable holding the Phoenix API key (sent as `Authorization: Bearer ...`)."""
_RETRY_STATUS: Final = frozenset({408, 429, 500, 502, 503, 504})
_MAX_BACKOFF_S: Final = 30.0


class PhoenixError(RuntimeError):
    """A Phoenix request failed for good (after retries); the message names the URL and reason."""

    pages_read: int = 0
    """Span pages read before the failure (set by `rescore_phoenix`): 0 means nothing was read."""


class PhoenixUnavailableError(PhoenixError):
    """Phoenix could not be reached (connection refused, timeout, 5xx after every retry)."""


class PhoenixNotFoundError(PhoenixError):
    """Phoenix answered 404: the project (or route) does not exist."""


@dataclass(frozen=True, slots=True)
class SpanPage:
    """One page of the OTLP-shaped span listing, as decoded JSON, and the cursor to the next."""

    spans: list[Any]
    next_cursor: str | None
    number: int
    """1-based page number within the listing (for messages)."""


class PhoenixClient:
    """Talks to one Phoenix server: `base_url` like `http://127.0.0.1:6006`."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        min_interval_s: float = 0.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        for name, value in (("timeout_s", timeout_s), ("backoff_s", backoff_s)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"PhoenixClient: {name} must be a number >= 0, got {value!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"PhoenixClient: retries must be an int >= 0, got {retries!r}")
        if not isinstance(min_interval_s, int | float) or min_interval_s < 0:
            raise ValueError(
                f"PhoenixClient: min_interval_s must be a number >= 0, got {min_interval_s!r}"
            )
        self.base_url = base_url.rstrip("/")
        key = api_key if api_key is not None else os.environ.get(ENV_API_KEY) or None
        headers = {"Accept": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._http = httpx.Client(
            base_url=self.base_url, headers=headers, timeout=timeout_s, transport=transport
        )
        self.retries = retries
        self.backoff_s = backoff_s
        self.min_interval_s = float(min_interval_s)
        self._lock = threading.Lock()
        self._next_slot = 0.0
        self.requests = 0
        """Requests sent, retries included."""
        self.retried = 0
        """Requests that were sent again after a retryable failure."""

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> PhoenixClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait_for_slot(self) -> None:
        """Space requests at least `min_interval_s` apart (shared by every thread)."""
        if not self.min_interval_s:
            return
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot)
            self._next_slot = slot + self.min_interval_s
        if slot > now:
            time.sleep(slot - now)

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
    ) -> Any:
        """Send one request (retried) and return its decoded JSON body (None when empty)."""
        url = f"{self.base_url}{path}"
        attempt = 0
        while True:
            self._wait_for_slot()
            self.requests += 1
            delay: float | None = None
            try:
                response = self._http.request(method, path, params=params, json=json)
            except httpx.TransportError as error:
                if attempt >= self.retries:
                    raise PhoenixUnavailableError(
                        f"Phoenix at {self.base_url} cannot be reached ({method} {url}): "
                        f"{type(error).__name__}: {error or 'no answer'}"
                    ) from None
            else:
                if response.status_code < 400:
                    return _json(method, url, response)
                if response.status_code not in _RETRY_STATUS or attempt >= self.retries:
                    raise _error_for(method, url, response)
                delay = _retry_after(response)
            attempt += 1
            self.retried += 1
            if delay is None:
                delay = self.backoff_s * 2 ** (attempt - 1)
            time.sleep(min(delay, _MAX_BACKOFF_S))

    def span_pages(
        self,
        project: str,
        *,
        start_time: str | None = None,
        end_time: str | None = None,
        page_size: int = 1000,
        extra: Mapping[str, Any] | None = None,
    ) -> Iterator[SpanPage]:
        """Every page of `GET /v1/projects/{project}/spans/otlpv1`, following the cursor.

        `start_time` (inclusive) and `end_time` (exclusive) are ISO 8601; `extra` adds further
        query parameters the server accepts (see its `/openapi.json`).
        """
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise ValueError(f"page_size must be an int >= 1, got {page_size!r}")
        path = f"/v1/projects/{quote(project, safe='')}/spans/otlpv1"
        params: dict[str, Any] = {"limit": page_size, **(extra or {})}
        if start_time is not None:
            params["start_time"] = start_time
        if end_time is not None:
            params["end_time"] = end_time
        cursor: str | None = None
        number = 0
        while True:
            if cursor is not None:
                params["cursor"] = cursor
            try:
                body = self.request("GET", path, params=params)
            except PhoenixNotFoundError as error:
                raise PhoenixNotFoundError(
                    f"project {project!r} not found on Phoenix at {self.base_url} "
                    f"(a project appears once its first span is stored): {error}"
                ) from None
            number += 1
            if not isinstance(body, Mapping) or not isinstance(body.get("data"), list):
                raise PhoenixError(
                    f"GET {self.base_url}{path} page {number}: expected a JSON object with a "
                    f"'data' list, got {type(body).__name__}"
                )
            next_cursor = body.get("next_cursor")
            if next_cursor is not None and not isinstance(next_cursor, str):
                raise PhoenixError(
                    f"GET {self.base_url}{path} page {number}: next_cursor is not a string"
                )
            yield SpanPage(list(body["data"]), next_cursor or None, number)
            if not next_cursor:
                return
            cursor = next_cursor

    def post_span_annotations(self, annotations: list[dict[str, Any]]) -> int:
        """`POST /v1/span_annotations?sync=true` with `annotations`; how many Phoenix stored."""
        body = self.request(
            "POST", "/v1/span_annotations", params={"sync": "true"}, json={"data": annotations}
        )
        data = body.get("data") if isinstance(body, Mapping) else None
        return len(data) if isinstance(data, list) else len(annotations)


def _json(method: str, url: str, response: httpx.Response) -> Any:
    """The decoded JSON body (None when empty); PhoenixError when it is not JSON."""
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError as error:
        raise PhoenixError(
            f"{method} {url}: HTTP {response.status_code} but the body is not JSON ({error}); "
            "is this a Phoenix server?"
        ) from None


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds from a `Retry-After` header given in seconds; None when absent or a date."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _error_for(method: str, url: str, response: httpx.Response) -> PhoenixError:
    """The PhoenixError for a final error answer, quoting the start of its body."""
    text = response.text.strip().replace("\n", " ")
    if len(text) > 300:
        text = text[:300] + "..."
    message = f"{method} {url}: HTTP {response.status_code}" + (f": {text}" if text else "")
    if response.status_code == 404:
        return PhoenixNotFoundError(message)
    if response.status_code in (401, 403):
        return PhoenixError(f"{message} (set {ENV_API_KEY} to the server's API key)")
    if response.status_code >= 500:
        return PhoenixUnavailableError(message)
    return PhoenixError(message)
