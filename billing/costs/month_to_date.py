"""The month's chargeback curves (``gpucore.month_curves``), built once per process and rebuilt when an input changes.

Pages show a team's month so far (home, approval queue, team and request pages); recomputing it from every request
held this month took 17 s per page at 5,000 requests (issue #15). The curves answer for any moment of the month, so
they stay right as time passes and need rebuilding only when what they were built from changes. Each is kept under
version tokens in the shared cache (Redis in production, so every gunicorn worker and Celery process sees a change):

- one per team, replaced when one of its requests, their events or its imported usage is saved or deleted;
- one for the whole organisation, replaced with every team's (the approvers' view and shared idle cost read all);
- one for what prices and shares every allocation (price books, GPU prices, SLA multipliers and tiers, the catalog,
  clusters and pools, teams), replaced when any of those is saved or deleted.

A process that builds curves also leaves them in the shared cache beside the tokens they were built under (compressed;
one entry per team or organisation and month, overwritten, so stale builds do not pile up): the next worker whose
own copy is missing or outdated reads them instead of building its own (at 50,000 requests held in a month a build
takes seconds, and every gunicorn worker and Celery process used to build it after each change).

The tokens are ``allocations.version_tokens``': replaced at once and again when the transaction commits (a process
that rebuilt in between from rows not yet committed rebuilds once more); a cleared cache is a new token. Writes that
bypass ``save()`` (a queryset ``update``, raw SQL) must call ``month_to_date_changed`` themselves.
"""

from __future__ import annotations

import logging
import pickle
import zlib
from collections.abc import Callable, Iterable
from datetime import date
from typing import Any

from django.core.cache import cache
from django.core.exceptions import ObjectDoesNotExist

from allocations.version_tokens import KeptUnderTokens, current_tokens, replace_tokens
from gpucore.month_curves import MonthCurves

_PREFIX = "billing:month-to-date:"
PRICING_KEY = _PREFIX + "pricing"
ORGANISATION_KEY = _PREFIX + "organisation"
_MAX_KEPT = 256  # (scope, month) entries per process: teams x the months people look at
# How long built curves stay in the shared cache unread: past the month's end they are only read for its last day.
_SHARED_TIMEOUT = 40 * 24 * 3600
_built = KeptUnderTokens(limit=_MAX_KEPT)


def _team_key(team_id: int) -> str:
    return f"{_PREFIX}team:{team_id}"


logger = logging.getLogger(__name__)


def _shared_key(name: tuple[int | None, date, bool]) -> str:
    team_id, month, share_idle = name
    scope = "organisation" if team_id is None else f"team:{team_id}"
    return f"{_PREFIX}built:{scope}:{month.isoformat()}:{'shared-idle' if share_idle else 'own'}"


def _shared_read(name: tuple[int | None, date, bool], tokens: tuple[str, ...]) -> MonthCurves | None:
    """Curves another process built under these very tokens, or None."""
    stored = cache.get(_shared_key(name))
    if not isinstance(stored, bytes):
        return None
    try:
        built_under, curves = pickle.loads(zlib.decompress(stored))  # noqa: S301 (our own cache, our own pickle)
    except Exception:  # an entry of an older release or a cut one: build instead
        logger.warning("Month curves in the shared cache could not be read; building them.", exc_info=True)
        return None
    return curves if built_under == tokens and isinstance(curves, MonthCurves) else None


def _shared_write(name: tuple[int | None, date, bool], tokens: tuple[str, ...], curves: MonthCurves) -> None:
    payload = zlib.compress(pickle.dumps((tokens, curves), protocol=pickle.HIGHEST_PROTOCOL), 1)
    cache.set(_shared_key(name), payload, timeout=_SHARED_TIMEOUT)


def month_curves(
    *, team_id: int | None, month: date, share_idle: bool, build: Callable[[], MonthCurves]
) -> MonthCurves:
    """``build()``'s curves for one team's month (``team_id``) or the whole organisation's (None), reused while none of
    their inputs changed (this process's copy, else the shared cache's, else built and shared); callers must never
    change them."""
    tokens = current_tokens([PRICING_KEY, ORGANISATION_KEY if team_id is None else _team_key(team_id)])
    return _kept_or_built(name=(team_id, month, share_idle), tokens=tokens, build=build)


def teams_month_curves(
    *, team_ids: Iterable[int], month: date, build: Callable[[int], MonthCurves]
) -> dict[int, MonthCurves]:
    """``month_curves`` of each team (idle cost not shared), ``build(team_id)`` building one, with every team's tokens
    read in one round trip of the shared cache: a page of the approval queue made one per team (issue #15)."""
    team_ids = list(dict.fromkeys(team_ids))
    pricing, *team_tokens = current_tokens([PRICING_KEY, *(_team_key(team_id) for team_id in team_ids)])
    return {
        team_id: _kept_or_built(
            name=(team_id, month, False), tokens=(pricing, token), build=lambda team_id=team_id: build(team_id)
        )
        for team_id, token in zip(team_ids, team_tokens, strict=True)
    }


def _kept_or_built(
    *, name: tuple[int | None, date, bool], tokens: tuple[str, ...], build: Callable[[], MonthCurves]
) -> MonthCurves:
    kept = _built.get(name, tokens)
    if kept is not None:
        return kept
    curves = _shared_read(name, tokens)
    if curves is None:
        curves = build()
        _shared_write(name, tokens, curves)
    _built.put(name, tokens, curves)
    return curves


def month_to_date_changed(*, team_ids: Iterable[int] | None = None) -> None:
    """The requests, events or imported usage of these teams changed (None: anything that prices allocations)."""
    if team_ids is None:
        replace_tokens([PRICING_KEY])
    else:
        replace_tokens([ORGANISATION_KEY, *(_team_key(team_id) for team_id in set(team_ids))])


def team_inputs_changed(sender: type, instance: Any, **_: Any) -> None:
    """Signal receiver: a request (or an event or imported usage row) of ``instance``'s team was saved or deleted."""
    team_id = getattr(instance, "team_id", None)
    if team_id is None and getattr(instance, "request_id", None) is not None:
        try:
            team_id = instance.request.team_id  # a request event: its request is loaded where it was written
        except ObjectDoesNotExist:
            team_id = None
    # A team not known (an event whose request is gone) rebuilds everyone's: never a stale figure.
    month_to_date_changed(team_ids=None if team_id is None else [team_id])


def pricing_inputs_changed(**_: Any) -> None:
    """Signal receiver: a price book, rate, tier, catalog entry, cluster, pool or team was saved or deleted."""
    month_to_date_changed()
