"""Reference data built once per process and rebuilt when it changes (issue #15): the catalog, the SLA tiers, the
candidate node pools of placement and the price books' GPU rates (billing.costs.selectors).

Every recommendation used to read the GPU models, their MIG profiles and the tiers (three queries and a few hundred
ORM objects) although admins change them a few times a year. Each process keeps the pure, frozen values it built
under a version token kept in the shared cache (Redis in production, so every gunicorn worker and Celery process
sees a change); a save or delete of those models replaces the token at once and again when its transaction commits
(a process that rebuilt in between from the not yet committed rows rebuilds once more). A cleared cache is a new
token: nothing survives it.

Within one web request the token is read from the shared cache once: a recommendation builds four of these values,
and with Redis each read was a round trip (issue #15). The request then works from one consistent version; a change
it makes itself is seen at once (``bump_reference_version`` forgets its copy), another process's from the next
request on. Outside requests (Celery, commands) every call reads the cache, as before, except inside
``one_version()``: a placement builds four kept values and works from one version, read once, there too.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, TypeVar

from django.core.signals import request_finished, request_started
from django.db import transaction

from allocations.version_tokens import KeptUnderTokens, current_token, replace_tokens

VERSION_KEY = "allocations:reference-data-version"
_T = TypeVar("_T")
_built = KeptUnderTokens()
# The token as the current web request read it ({} until it is read; None outside a request).
_request_memo: ContextVar[dict[str, str] | None] = ContextVar("reference_version_of_request", default=None)


def _request_begins(**_: Any) -> None:
    _request_memo.set({})


def _request_ends(**_: Any) -> None:
    _request_memo.set(None)


request_started.connect(_request_begins, dispatch_uid="reference-version-request-started")
request_finished.connect(_request_ends, dispatch_uid="reference-version-request-finished")


def reference_version() -> str:
    """The current version token (read once per web request), creating one when the cache has none."""
    memo = _request_memo.get()
    if memo is not None and VERSION_KEY in memo:
        return memo[VERSION_KEY]
    token = current_token(VERSION_KEY)
    if memo is not None:
        memo[VERSION_KEY] = token
    return token


class one_version:  # lower case: read as ``with one_version():``
    """Within the block, the version token is read from the shared cache at most once, as within a web request (where
    it already is, this does nothing): what the block builds comes from one consistent version (issue #15)."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token: Token[dict[str, str] | None] | None = (
            _request_memo.set({}) if _request_memo.get() is None else None
        )

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._token is not None:
            _request_memo.reset(self._token)


def bump_reference_version(**_: Any) -> None:
    """Invalidate every process's copies now and once more when the current transaction commits."""
    replace_tokens([VERSION_KEY])
    _forget_request_token()
    transaction.on_commit(_forget_request_token)


def _forget_request_token() -> None:
    # The request that changed the data reads the new token, not the one it read before.
    memo = _request_memo.get()
    if memo is not None:
        memo.pop(VERSION_KEY, None)


def built_once(name: str, build: Callable[[], _T]) -> _T:
    """``build()``'s value, reused while the version token is unchanged; callers must never change the value."""
    token = reference_version()
    value = _built.get(name, token)
    if value is None:
        value = build()
        _built.put(name, token, value)
    return value
