"""The judge retry rules: which statuses are transient, Retry-After parsing, and the backoff."""

from __future__ import annotations

import email.utils
import random
import time

import httpx
import openai
import pytest

from groundwire.judges._retry import backoff_delay, is_retryable, retry_after_s


def _status_error(status: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    """The error the openai client raises for an HTTP answer with `status` and `headers`."""
    request = httpx.Request("POST", "http://judge.test/v1/chat/completions")
    response = httpx.Response(status, headers=headers or {}, request=request)
    return openai.APIStatusError("judge answered", response=response, body=None)


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (404, False), (422, False), (499, False), (408, True),
     (409, True), (429, True), (500, True), (501, True), (503, True), (599, True)],
)  # fmt: skip
def test_transient_statuses_are_retried_and_client_errors_are_not(
    status: int, retryable: bool
) -> None:
    """408, 409, 429 and every 5xx are retried; other 4xx answers are final."""
    assert is_retryable(_status_error(status)) is retryable


def test_retry_after_ms_wins_and_is_in_milliseconds() -> None:
    """`retry-after-ms: 1500` is 1.5 s, preferred over `Retry-After`."""
    error = _status_error(429, {"retry-after-ms": "1500", "retry-after": "9"})
    assert retry_after_s(error) == 1.5


@pytest.mark.parametrize(("value", "seconds"), [("7", 7.0), ("0", 0.0), ("-3", 0.0)])
def test_retry_after_in_seconds(value: str, seconds: float) -> None:
    """`Retry-After: N` is N seconds, never negative."""
    assert retry_after_s(_status_error(503, {"retry-after": value})) == seconds


def test_retry_after_as_an_http_date_is_the_time_until_then() -> None:
    """`Retry-After: <HTTP date>` 30 s ahead is about 30 s; a date in the past is 0."""
    ahead = email.utils.formatdate(time.time() + 30, usegmt=True)
    waited = retry_after_s(_status_error(503, {"retry-after": ahead}))
    assert waited is not None and 27.0 <= waited <= 30.5
    past = email.utils.formatdate(time.time() - 60, usegmt=True)
    assert retry_after_s(_status_error(503, {"retry-after": past})) == 0.0


def test_no_or_unreadable_retry_after_says_nothing() -> None:
    """No header, or one that is neither a number nor a date: None (use the backoff)."""
    assert retry_after_s(_status_error(503)) is None
    assert retry_after_s(_status_error(503, {"retry-after": "soon"})) is None
    assert retry_after_s(ValueError("no response")) is None


@pytest.mark.parametrize("retry", [0, 1, 2, 3, 6])
def test_backoff_is_equal_jitter_between_half_and_all_of_the_doubling_ceiling(retry: int) -> None:
    """Delay for retry n lies in [c/2, c] with c = min(max, base * 2**n), and spreads over it."""
    base, most = 0.5, 8.0
    ceiling = min(most, base * 2.0**retry)
    random.seed(retry)
    delays = [backoff_delay(retry, base, most) for _ in range(400)]
    assert all(ceiling / 2 <= d <= ceiling for d in delays)
    assert min(delays) < ceiling / 2 + ceiling * 0.05
    assert max(delays) > ceiling - ceiling * 0.05
