"""Values built from rarely changing rows, kept per process and rebuilt when those rows change.

A *family* names a set of inputs (the reference tables, the hourly rollups, the requests a team holds). Each has a
version token in Django's cache (Redis in production, shared by every gunicorn worker and Celery process). A value
is kept in this process under the tokens of the families it was built from, and reused while they are unchanged.

The one rule: a save or delete of a model registered for a family (``INVALIDATIONS``, the only registration) replaces
the family's token at once and again when the transaction commits, so a process that rebuilt in between from rows
not yet committed rebuilds once more. Writes that bypass ``save()`` (bulk updates, SQL) call ``invalidate``. A
cleared cache is a new token: nothing kept survives it. Within a web request each family's token is read from the
cache once, and a change the request makes is seen by it at once.

When the cache does not answer (Redis down), the token is unknown: values are built from the database on every call
and a warning is logged once per outage. Tokens that could not be replaced then are replaced when it answers again.
"""

from __future__ import annotations

import logging
import pickle
import threading
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, TypeVar

from django.apps import apps
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import transaction
from django.db.models.signals import ModelSignal, m2m_changed, post_delete, post_save

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

REFERENCE_DATA = "reference-data"
ROLLUPS = "rollups"
MONTH_PRICES = "month-prices"
MONTH_HELD = "month-held"
PERMISSIONS = "permissions"

_SAVE_OR_DELETE = (post_save, post_delete)


@dataclass(frozen=True)
class Invalidation:
    """``signals`` of ``model`` replace the family's token; with ``per`` (an attribute path of the instance, such as
    its team's id) the token of the family's scope ``scoped(family, <that value>)`` as well."""

    model: str
    signals: tuple[ModelSignal, ...] = _SAVE_OR_DELETE
    per: str | None = None


def _on_save_or_delete(*models: str) -> tuple[Invalidation, ...]:
    return tuple(Invalidation(model) for model in models)


# Which model changes replace which family's token: the one place they are registered.
INVALIDATIONS: dict[str, tuple[Invalidation, ...]] = {
    # The catalog, SLA tiers, placement's candidate pools, the price books' rates and every team's money budget.
    REFERENCE_DATA: _on_save_or_delete(
        "allocations.GpuModel",
        "allocations.MigProfileDefinition",
        "allocations.SlaTier",
        "allocations.Cluster",
        "allocations.NodePool",
        "billing.PriceBook",
        "billing.GpuPrice",
        "billing.TeamBudget",
    ),
    # What the fleet's pages derive from the hourly rollups. Not on a rollup's delete: a receiver would make every
    # bulk delete load each row to send it (deleters call ``invalidate``); a deleted cluster, team or request
    # cascades to or renames rollups.
    ROLLUPS: (
        Invalidation("billing.UtilizationRollup", signals=(post_save,)),
        *(
            Invalidation(model, signals=(post_delete,))
            for model in ("allocations.Cluster", "allocations.Team", "allocations.GpuRequest")
        ),
    ),
    # What prices and shares every allocation of the month's chargeback curves.
    MONTH_PRICES: _on_save_or_delete(
        "billing.PriceBook",
        "billing.GpuPrice",
        "billing.SlaMultiplier",
        "allocations.SlaTier",
        "allocations.GpuModel",
        "allocations.MigProfileDefinition",
        "allocations.Cluster",
        "allocations.NodePool",
        "allocations.Team",
    ),
    # What the teams held: the organisation's curves read the family, a team's its scope (the team's id).
    MONTH_HELD: (
        Invalidation("allocations.GpuRequest", per="team_id"),
        # Events are appended, and deleted only with their request, whose delete replaces the team's token.
        Invalidation("allocations.RequestEvent", signals=(post_save,), per="request.team_id"),
        Invalidation("billing.ImportedUsage", per="team_id"),
    ),
    # Who holds which permission: a user's own and their groups' (the authentication backend's per-user sets).
    PERMISSIONS: (
        *_on_save_or_delete("auth.Permission", "auth.Group"),
        *(
            Invalidation(through, signals=(m2m_changed,))
            for through in ("auth.User_groups", "auth.User_user_permissions", "auth.Group_permissions")
        ),
    ),
}

_VERSION_KEY_PREFIX = "reference-cache:version:"
_VALUE_PREFIX = "reference-cache:value:"
_MAX_KEPT = 256  # values per process: the reference data, and the month curves of the teams and months people view
# Shared values are overwritten when rebuilt; the timeout only removes those of keys no longer read (past months).
_SHARED_TIMEOUT = 40 * 24 * 3600
_MISSING: Any = object()


def scoped(family: str, scope: Hashable) -> str:
    """The name of one scope of a family (a team's part of ``MONTH_HELD``), whose token a change of that scope
    replaces along with the family's."""
    return f"{family}:{scope}"


def cached(families: str | Sequence[str], key: str, build: Callable[[], _T], *, shared: bool = False) -> _T:
    """``build()``'s value for ``key``, reused while the tokens of ``families`` are unchanged; callers must never
    change it. ``shared``: a process that lacks it reads it from the cache, where the process that built it left it
    (for values that take long to build)."""
    return cached_each({key: (families, build)}, shared=shared)[key]


def cached_each(
    wanted: Mapping[str, tuple[str | Sequence[str], Callable[[], _T]]], *, shared: bool = False
) -> dict[str, _T]:
    """``cached`` for each key of ``wanted`` (key -> its families and build), every token read in one round trip."""
    families_of = {
        key: (families,) if isinstance(families, str) else tuple(families) for key, (families, _) in wanted.items()
    }
    tokens = _tokens({family for families in families_of.values() for family in families})
    values = {}
    for key, (_, build) in wanted.items():
        under = None if tokens is None else tuple(tokens.get(family) for family in families_of[key])
        values[key] = _kept_or_built(key, under, build, shared=shared)
    return values


def invalidate(*families: str) -> None:
    """New tokens for ``families``: every process rebuilds what it kept under them, now and once more when the current
    transaction commits."""
    for family in families:
        _check_family(family)
    _replace(families)
    transaction.on_commit(lambda: _replace(families))


def connect_signals() -> None:
    """Connect the receivers ``INVALIDATIONS`` declares, one per model and signal, and those that give each web
    request its own reading of the tokens (the infra app's ``ready``)."""
    request_started.connect(_request_began, dispatch_uid="reference-cache-request-started")
    request_finished.connect(_request_ended, dispatch_uid="reference-cache-request-finished")
    rules: dict[tuple[str, ModelSignal], list[tuple[str, Invalidation]]] = {}
    for family, invalidations in INVALIDATIONS.items():
        for invalidation in invalidations:
            for signal in invalidation.signals:
                rules.setdefault((invalidation.model, signal), []).append((family, invalidation))
    for (model, signal), families in rules.items():
        name = _SIGNAL_NAMES[signal]
        signal.connect(
            _receiver(families),
            sender=apps.get_model(model),
            weak=False,
            dispatch_uid=f"reference-cache:{model}:{name}",
        )


_SIGNAL_NAMES = {post_save: "save", post_delete: "delete", m2m_changed: "m2m"}


def _receiver(families: list[tuple[str, Invalidation]]) -> Callable[..., None]:
    scope_readers = [(family, attrgetter(rule.per) if rule.per else None) for family, rule in families]

    def changed(sender: type, instance: Any, action: str = "", **_: Any) -> None:
        if action.startswith("pre_"):  # m2m_changed: its post_ action follows
            return
        replaced = []
        for family, read_scope in scope_readers:
            replaced.append(family)
            scope = None if read_scope is None else read_scope(instance)
            if scope is not None:
                replaced.append(scoped(family, scope))
        invalidate(*replaced)

    return changed


def _check_family(name: str) -> None:
    if name.partition(":")[0] not in INVALIDATIONS:
        raise ValueError(f"{name!r} is not a family of the reference cache (INVALIDATIONS)")


class _Kept:
    """The values this process built, each with the tokens it was built under (the least recently used leave
    first)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._values: OrderedDict[str, tuple[tuple[str, ...], Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, tokens: tuple[str, ...]) -> Any:
        with self._lock:
            hit = self._values.get(key)
            if hit is None or hit[0] != tokens:
                return _MISSING
            self._values.move_to_end(key)
            return hit[1]

    def put(self, key: str, tokens: tuple[str, ...], value: Any) -> None:
        with self._lock:
            self._values[key] = (tokens, value)
            self._values.move_to_end(key)
            while len(self._values) > self._limit:
                self._values.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


_kept = _Kept(_MAX_KEPT)
# The tokens the current web request read or wrote (None outside one): a page reads each family's once, not once per
# value it shows, and works from one version.
_request_tokens: ContextVar[dict[str, str] | None] = ContextVar("reference_cache_request_tokens", default=None)


def _request_began(**_: Any) -> None:
    _request_tokens.set({})


def _request_ended(**_: Any) -> None:
    _request_tokens.set(None)


_state_lock = threading.Lock()
_unreplaced: set[str] = set()  # families whose new token the cache did not take
_cache_down = False


def _kept_or_built(key: str, tokens: tuple[str | None, ...] | None, build: Callable[[], _T], *, shared: bool) -> _T:
    if tokens is None or None in tokens:  # the cache did not answer (or keeps nothing): build from the database
        return build()
    value = _kept.get(key, tokens)
    if value is not _MISSING:
        return value
    value = _shared_read(key, tokens) if shared else _MISSING
    if value is _MISSING:
        value = build()  # after the tokens were read: a change meanwhile leaves it under the older tokens
        if shared:
            _shared_write(key, tokens, value)
    _kept.put(key, tokens, value)
    return value


def _tokens(families: set[str]) -> dict[str, str | None] | None:
    """The current token of each family (one round trip, none for those this web request read already), creating
    those the cache lacks; None when the cache fails."""
    for family in families:
        _check_family(family)
    memo = _request_tokens.get()
    known = {family: memo[family] for family in families if family in memo} if memo is not None else {}
    keys = {family: _VERSION_KEY_PREFIX + family for family in families if family not in known}
    if not keys:
        return known
    try:
        _replace_unreplaced()
        found = cache.get_many(list(keys.values()))
        missing = [key for key in keys.values() if key not in found]
        for key in missing:
            cache.add(key, uuid.uuid4().hex, timeout=None)  # another process may add its own first: read the winner
        if missing:
            found.update(cache.get_many(missing))
    except Exception:
        _cache_failed()
        return None
    _cache_answered()
    read = {family: found.get(key) for family, key in keys.items()}
    if memo is not None:
        memo.update({family: token for family, token in read.items() if token is not None})
    return {**known, **read}


def _replace(families: Sequence[str]) -> None:
    tokens = {family: uuid.uuid4().hex for family in families}
    memo = _request_tokens.get()
    if memo is not None:  # the request that made the change reads what it wrote
        memo.update(tokens)
    try:
        cache.set_many({_VERSION_KEY_PREFIX + family: token for family, token in tokens.items()}, timeout=None)
    except Exception:
        with _state_lock:
            _unreplaced.update(families)
        _cache_failed()


def _replace_unreplaced() -> None:
    with _state_lock:
        families = set(_unreplaced)
    if families:
        cache.set_many({_VERSION_KEY_PREFIX + family: uuid.uuid4().hex for family in families}, timeout=None)
        with _state_lock:
            _unreplaced.difference_update(families)


def _shared_read(key: str, tokens: tuple[str, ...]) -> Any:
    try:
        stored = cache.get(_VALUE_PREFIX + key)
    except Exception:
        _cache_failed()
        return _MISSING
    if not isinstance(stored, bytes):
        return _MISSING
    try:
        built_under, value = pickle.loads(zlib.decompress(stored))  # noqa: S301 (our own cache, our own pickle)
    except Exception:  # an entry of an older release or a cut one: build instead
        logger.warning("A value in the shared cache could not be read; building it.", exc_info=True)
        return _MISSING
    return value if built_under == tokens else _MISSING


def _shared_write(key: str, tokens: tuple[str, ...], value: Any) -> None:
    payload = zlib.compress(pickle.dumps((tokens, value), protocol=pickle.HIGHEST_PROTOCOL), 1)
    try:
        cache.set(_VALUE_PREFIX + key, payload, timeout=_SHARED_TIMEOUT)
    except Exception:
        _cache_failed()


def _cache_failed() -> None:
    global _cache_down
    with _state_lock:
        first = not _cache_down
        _cache_down = True
    # What this process kept may have been replaced meanwhile by a writer whose new token is not yet written.
    _kept.clear()
    if first:
        logger.warning(
            "The cache does not answer: reference data is read from the database until it does.", exc_info=True
        )


def _cache_answered() -> None:
    global _cache_down
    if _cache_down:
        with _state_lock:
            _cache_down = False
        logger.info("The cache answers again: reference data is kept again.")
