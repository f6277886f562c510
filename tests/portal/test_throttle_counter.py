"""The fixed-window counters behind the API's rate limits count the same on Redis as in local memory, expire with
their window, and the failure brake reads them back."""

from __future__ import annotations

import uuid

import pytest
import redis
from django.core.cache import cache
from django.test import override_settings

from infra.throttling import window_count, window_hit

pytestmark = pytest.mark.redis


@pytest.fixture
def redis_cache(settings):
    """The default cache on the test's Redis database, under a key prefix of this test's own."""
    caches = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": settings.INTEGRATION_BROKER_URL,
            "KEY_PREFIX": f"test-throttle-{uuid.uuid4().hex}",
        }
    }
    with override_settings(CACHES=caches):
        yield cache
        cache.delete_many([f"k:{start}" for start in (600, 660, 720)])


def _hits(now: float) -> list[tuple[int, int]]:
    return [window_hit("k", duration=60, now=now + offset) for offset in (0, 1, 59, 60, 61)]


def test_redis_counts_as_local_memory_does(redis_cache, settings) -> None:
    on_redis = _hits(600)
    assert window_count("k", duration=60, now=600) == (3, 60)  # read back by cache.get: a plain integer
    server = redis.Redis.from_url(settings.INTEGRATION_BROKER_URL)
    assert server.ttl(redis_cache.make_key("k:600")) in range(60, 66)
    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}):
        assert _hits(600) == on_redis == [(1, 60), (2, 59), (3, 1), (1, 60), (2, 59)]


def test_an_expired_window_starts_again(redis_cache) -> None:
    window_hit("k", duration=60, now=720)
    redis_cache.delete("k:720")  # expired between two hits
    assert window_hit("k", duration=60, now=721) == (1, 59)
