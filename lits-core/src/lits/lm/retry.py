"""Retries for model servers, as an httpx transport wrapper driven by tenacity.

Transport errors, timeouts and 408/409/429/5xx are retried with exponential
backoff and jitter, honouring ``Retry-After``; other statuses (400, 401, 403,
404, 422, ...) return at once.  After the last attempt the last response (or
error) goes back to the caller, which turns it into one clear message.
"""

from __future__ import annotations

import email.utils
import time
from typing import Optional

import httpx
import tenacity

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class RetryableStatus(Exception):
    def __init__(self, response: httpx.Response) -> None:
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def retry_after_seconds(response: httpx.Response, cap: float) -> Optional[float]:
    """Seconds from a ``Retry-After`` header (delta or HTTP date), capped."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        if parsed is None:
            return None
        seconds = parsed.timestamp() - time.time()
    return max(0.0, min(cap, seconds))


class RetryTransport(httpx.BaseTransport):
    def __init__(
        self,
        inner: httpx.BaseTransport,
        *,
        attempts: int = 4,
        base_wait: float = 0.5,
        max_wait: float = 20.0,
        max_retry_after: float = 60.0,
    ) -> None:
        self.inner = inner
        self.attempts = max(1, attempts)
        self.backoff = tenacity.wait_random_exponential(multiplier=base_wait, max=max_wait)
        self.max_retry_after = max_retry_after

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, RetryableStatus):
            hinted = retry_after_seconds(exc.response, self.max_retry_after)
            if hinted is not None:
                return hinted
        return float(self.backoff(state))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.attempts),
            wait=self._wait,
            retry=tenacity.retry_if_exception_type((httpx.TransportError, RetryableStatus)),
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    response = self.inner.handle_request(request)
                    if response.status_code in RETRY_STATUS:
                        response.read()
                        raise RetryableStatus(response)
                    return response
        except RetryableStatus as exc:
            exc.response.extensions["lits_attempts"] = self.attempts
            return exc.response
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.inner.close()
