"""A version token of the hourly utilization rollups, replaced whenever any is written (issue #15).

The fleet's pages show GPU alerts and busy GPUs per pool, which are derived from every rollup of a window (24,000
rows a day at 1,000 GPUs); each process keeps what it derived under this token (``billing.utilization.selectors``).
The token lives in the shared cache (``allocations.version_tokens``: every process sees a change; writers replace it
at once and again when their transaction commits).

Who replaces it: ``refresh_usage_aggregates``, which every writer of rollups calls after its write (the ingest, the
demo); the health pull, which fills the alert inputs of existing rows in bulk; and a rollup's ``save()`` (a
``post_save`` receiver, billing.apps). Anything else that writes rollups must call ``rollups_changed``.
"""

from __future__ import annotations

from typing import Any

from allocations.version_tokens import current_token, replace_tokens

VERSION_KEY = "billing:rollups-version"


def rollups_version() -> str:
    """The current token, creating one when the cache has none."""
    return current_token(VERSION_KEY)


def rollups_changed(**_: Any) -> None:
    """Rollups were written: every process's derived copies are stale, now and once more at commit."""
    replace_tokens([VERSION_KEY])
