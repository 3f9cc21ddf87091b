"""When and how long to wait before retrying a judge call: 429/408/409/5xx, timeouts, dropped
connections and unreadable bodies are retried with exponential backoff, honouring Retry-After."""

from __future__ import annotations

import email.utils
import json
import random
import time

__all__ = ["backoff_delay", "is_connection_error", "is_retryable", "retry_after_s"]

_RETRYABLE_STATUS = frozenset({408, 409, 429})


def is_retryable(error: BaseException) -> bool:
    """True for transient failures worth another attempt."""
    import openai  # imported here so that importing groundwire.judges stays light

    if isinstance(error, openai.APIStatusError):
        return error.status_code in _RETRYABLE_STATUS or error.status_code >= 500
    if isinstance(error, openai.APIConnectionError | TimeoutError):  # includes APITimeoutError
        return True
    # A body that is not JSON (a proxy's HTML error page, a truncated reply) is transient too.
    return isinstance(error, json.JSONDecodeError)


def is_connection_error(error: BaseException) -> bool:
    """True when the server could not be reached at all (refused, DNS, TLS, timeout): what the
    judge's circuit breaker counts. Any answer, even 429 or 5xx, proves the server is there."""
    import openai

    return isinstance(error, openai.APIConnectionError | TimeoutError | ConnectionError)


def retry_after_s(error: BaseException) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms` or `Retry-After`), if it said."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(float(raw_ms) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def backoff_delay(retry: int, base_s: float, max_s: float) -> float:
    """Exponential backoff with equal jitter: half of min(max, base * 2**retry), plus up to half."""
    ceiling = min(max_s, base_s * (2.0**retry))
    return ceiling / 2 + random.uniform(0, ceiling / 2)
