"""API rate limits that hold across gunicorn workers, and a brake on guessing API tokens.

DRF's stock throttles keep a per-client history list in the cache and rewrite it on every request (read, append,
write back), so concurrent workers lose each other's updates. These count in fixed windows with the cache's atomic
``add`` + ``incr`` instead: with Redis as the cache (``CACHE_URL``) every worker shares one exact counter.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle, SimpleRateThrottle, UserRateThrottle

logger = logging.getLogger(__name__)


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the address the TRUSTED_PROXY_COUNT-th proxy from us saw."""
    proxies = int(settings.REST_FRAMEWORK.get("NUM_PROXIES") or 0)
    remote = request.META.get("REMOTE_ADDR", "") or ""
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies <= 0 or not forwarded:
        return remote
    # Each trusted proxy appends the address it received from; what the outermost one saw is the client.
    hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
    return hops[-min(proxies, len(hops))] if hops else remote


def _parse_rate(rate: str) -> tuple[int, int]:
    """``"600/minute"`` as (600, 60), DRF's notation."""
    return SimpleRateThrottle.parse_rate(None, rate)  # type: ignore[arg-type]


def window_hit(key: str, *, duration: int, now: float | None = None) -> tuple[int, int]:
    """Count one hit on ``key`` in the current fixed window: (hits so far in it, seconds until it ends)."""
    instant = int(time.time() if now is None else now)
    start = instant - instant % duration
    bucket = f"{key}:{start}"
    cache.add(bucket, 0, timeout=duration + 5)
    try:
        count = cache.incr(bucket)
    except ValueError:  # the bucket expired between add and incr: this hit starts it again
        cache.add(bucket, 1, timeout=duration + 5)
        count = 1
    return count, start + duration - instant


def window_count(key: str, *, duration: int, now: float | None = None) -> tuple[int, int]:
    """Hits counted on ``key`` in the current fixed window, without counting one: (hits, seconds until it ends)."""
    instant = int(time.time() if now is None else now)
    start = instant - instant % duration
    return int(cache.get(f"{key}:{start}", 0)), start + duration - instant


class _SharedWindow:
    """Replaces SimpleRateThrottle's history list with an atomic fixed-window counter in the shared cache."""

    rate: str | None
    num_requests: int
    duration: int

    def allow_request(self, request: Request, view: Any) -> bool:
        """True while this client is within the scope's rate in the current window."""
        if self.rate is None:
            return True
        key = self.get_cache_key(request, view)  # type: ignore[attr-defined]  # from the DRF class mixed in
        if key is None:
            return True
        try:
            count, self._wait = window_hit(key, duration=self.duration)
        except Exception:
            # The cache is away: serving without a rate limit beats refusing every call.
            logger.warning("Rate limit not applied: the cache did not answer.", exc_info=True)
            return True
        return count <= self.num_requests

    def wait(self) -> float | None:
        """Seconds until the window ends (the Retry-After header)."""
        return float(getattr(self, "_wait", 0)) or None


class SharedAnonRateThrottle(_SharedWindow, AnonRateThrottle):
    """Anonymous API calls per client IP, counted in the shared cache."""


class SharedUserRateThrottle(_SharedWindow, UserRateThrottle):
    """Authenticated API calls per user (anonymous: per IP), counted in the shared cache."""


class FailureThrottledTokenAuthentication(TokenAuthentication):
    """Token authentication that answers 429 instead of 401 once failed tokens pass a budget, never to a valid one.

    Failures are counted twice in a window: per client address and per presented key's prefix (a named token's
    public id), so a scan from one address and guesses at one token both show as 429s in the access log. Every key
    is still checked (one indexed read; a key is 256 or 160 random bits, so guessing is hopeless anyway): a valid
    credential is served whoever failed before it from the same address, a NAT or an Ingress controller.
    """

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        """DRF's token check; a failure is counted, and answered 429 when its client or key prefix is over budget."""
        words = get_authorization_header(request).split()
        if not words or words[0].lower() != self.keyword.lower().encode():
            return None  # no token offered: another authentication class (or anonymous) applies
        try:
            return super().authenticate(request)
        except exceptions.AuthenticationFailed as failed:
            key = words[1].decode("ascii", errors="replace") if len(words) == 2 else ""
            wait = self._count_failure(client=client_ip(request._request), prefix=self.key_prefix(key))
            if wait is not None:
                raise exceptions.Throttled(
                    wait=wait, detail=f"Too many failed token attempts; retry in {wait} s."
                ) from failed
            raise

    @staticmethod
    def key_prefix(key: str) -> str:
        """The part of a key that names it without its secret: up to the last ``_`` (``gpp_<public id>``), else
        its first 8 characters (a legacy key is all secret)."""
        head, sep, _ = key.rpartition("_")
        return (head if sep else key[:8])[:64]

    @staticmethod
    def _count_failure(*, client: str, prefix: str) -> int | None:
        """Count one failure per client and per key prefix; the seconds to wait when either is over budget."""
        limit, duration = _parse_rate(settings.API_TOKEN_FAILURE_RATE)
        waits = []
        for key in (f"api-token-failures:client:{client}", f"api-token-failures:key:{prefix}"):
            try:
                count, wait = window_hit(key, duration=duration)
            except Exception:
                logger.warning("Failed token not counted: the cache did not answer.", exc_info=True)
                continue
            if count > limit:
                waits.append(wait)
        return max(waits) if waits else None
