"""A version token of the hourly utilization rollups, replaced whenever any is written (issue #15).

The approver's home shows the fleet's GPU alerts of the last day, which ``gpucore.alerts`` derives from every
rollup of that day (24,000 rows a day at 1,000 GPUs); each process keeps the alerts it derived under this token
(``billing.utilization.selectors``). The token lives in the shared cache (Redis in production: every gunicorn worker
and Celery process sees a change); writers replace it at once and again when their transaction commits (a process
that rebuilt in between from rows not yet committed rebuilds once more), as ``allocations.reference_cache`` does. A
cleared cache is a new token.

Who replaces it: ``refresh_usage_aggregates``, which every writer of rollups calls after its write (the ingest, the
demo); the health pull, which fills the alert inputs of existing rows in bulk; and a rollup's ``save()`` (a
``post_save`` receiver, billing.apps). Anything else that writes rollups must call ``rollups_changed``.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.core.cache import cache
from django.db import transaction

VERSION_KEY = "billing:rollups-version"


def rollups_version() -> str:
    """The current token, creating one when the cache has none."""
    token = cache.get(VERSION_KEY)
    if token is None:
        cache.add(VERSION_KEY, uuid.uuid4().hex, timeout=None)
        token = cache.get(VERSION_KEY)
    return token


def rollups_changed(**_: Any) -> None:
    """Rollups were written: every process's derived copies are stale, now and once more at commit."""

    def replace() -> None:
        cache.set(VERSION_KEY, uuid.uuid4().hex, timeout=None)

    replace()
    transaction.on_commit(replace)
