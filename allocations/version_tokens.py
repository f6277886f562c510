"""Version tokens in the shared cache, and values each process keeps while their tokens are unchanged (issue #15).

A token names the current version of some inputs (the reference data, the hourly rollups, a team's priced
requests). It lives in the shared cache (Redis in production: every gunicorn worker and Celery process sees a
change); a writer replaces it at once and again when its transaction commits, so a process that rebuilt in between
from rows not yet committed rebuilds once more. A cleared cache is a new token: nothing kept survives it.
``allocations.reference_cache``, ``billing.metering.rollups_version`` and ``billing.costs.month_to_date`` keep their
values under such tokens.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Any

from django.core.cache import cache
from django.db import transaction


def current_tokens(keys: Sequence[str]) -> tuple[str, ...]:
    """The current token of each key (one round trip), creating those the cache lacks."""
    found = cache.get_many(keys)
    for key in keys:
        if key not in found:
            cache.add(key, uuid.uuid4().hex, timeout=None)
            found[key] = cache.get(key)
    return tuple(found[key] for key in keys)


def current_token(key: str) -> str:
    """The current token of one key, creating it when the cache has none."""
    return current_tokens([key])[0]


def replace_tokens(keys: Sequence[str]) -> None:
    """New tokens for ``keys``, now and once more when the current transaction commits."""

    def replace() -> None:
        cache.set_many({key: uuid.uuid4().hex for key in keys}, timeout=None)

    replace()
    transaction.on_commit(replace)


class KeptUnderTokens:
    """Values this process built, each with the tokens it was built under: a value is found again only under the
    same tokens. At most ``limit`` values (the least recently used leave first); None keeps every one."""

    def __init__(self, limit: int | None = None) -> None:
        self._limit = limit
        self._kept: OrderedDict[Hashable, tuple[Any, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, slot: Hashable, tokens: Any) -> Any | None:
        """The value kept in ``slot`` under these very tokens, or None."""
        hit = self._kept.get(slot)
        if hit is None or hit[0] != tokens:
            return None
        if self._limit is not None:
            with self._lock:
                if slot in self._kept:
                    self._kept.move_to_end(slot)
        return hit[1]

    def put(self, slot: Hashable, tokens: Any, value: Any) -> None:
        """Keep ``value`` in ``slot``, built under ``tokens``."""
        with self._lock:
            self._kept[slot] = (tokens, value)
            self._kept.move_to_end(slot)
            while self._limit is not None and len(self._kept) > self._limit:
                self._kept.popitem(last=False)
