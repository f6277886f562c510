"""The month's chargeback curves (``gpucore.month_curves``), kept per process and rebuilt when an input changes.

Pages show a team's month so far (home, approval queue, team and request pages); recomputing it from every request
held this month takes seconds at thousands of requests. The curves answer for any moment of the month, so they stay
right as time passes and need rebuilding only when what they were built from changes. They are kept by
``infra.reference_cache`` under two families:

- ``MONTH_PRICES``: what prices and shares every allocation (price books, GPU prices, SLA multipliers and tiers, the
  catalog, clusters and pools, teams);
- ``MONTH_HELD``: what the teams held (requests, their events, imported usage); a team's curves read its scope alone,
  the organisation's (the approvers' view, shared idle cost) the whole family.

A process that builds curves also leaves them in the shared cache (``shared=True``): the next worker whose own copy
is missing or outdated reads them instead of building its own. Writes that bypass ``save()`` (a queryset
``update``, raw SQL) must call ``month_to_date_changed`` themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date

from billing.costs.day_charges import day_charges_forget
from gpucore.month_curves import MonthCurves
from infra.reference_cache import MONTH_HELD, MONTH_PRICES, cached, cached_each, invalidate, scoped


def _key(team_id: int | None, month: date, share_idle: bool) -> str:
    scope = "organisation" if team_id is None else f"team:{team_id}"
    return f"month-curves:{scope}:{month.isoformat()}:{'shared-idle' if share_idle else 'own'}"


def _families(team_id: int | None) -> tuple[str, str]:
    return (MONTH_PRICES, MONTH_HELD if team_id is None else scoped(MONTH_HELD, team_id))


def month_curves(
    *, team_id: int | None, month: date, share_idle: bool, build: Callable[[], MonthCurves]
) -> MonthCurves:
    """``build()``'s curves for one team's month (``team_id``) or the whole organisation's (None), reused while none of
    their inputs changed (this process's copy, else the shared cache's, else built and shared); callers must never
    change them."""
    return cached(_families(team_id), _key(team_id, month, share_idle), build, shared=True)


def teams_month_curves(
    *, team_ids: Iterable[int], month: date, build: Callable[[int], MonthCurves]
) -> dict[int, MonthCurves]:
    """``month_curves`` of each team (idle cost not shared), ``build(team_id)`` building one, with every team's tokens
    read in one round trip of the cache: a page of the approval queue shows many teams."""
    keys = {team_id: _key(team_id, month, False) for team_id in dict.fromkeys(team_ids)}
    curves = cached_each(
        {key: (_families(team_id), lambda team_id=team_id: build(team_id)) for team_id, key in keys.items()},
        shared=True,
    )
    return {team_id: curves[key] for team_id, key in keys.items()}


def month_to_date_changed(*, team_ids: Iterable[int] | None = None) -> None:
    """The requests, events or imported usage of these teams changed; None: of teams not known, so every team's and
    the organisation's curves are rebuilt. Every stored day's charges are priced again (``day_charges``)."""
    day_charges_forget()
    if team_ids is None:
        invalidate(MONTH_PRICES)
    else:
        invalidate(MONTH_HELD, *(scoped(MONTH_HELD, team_id) for team_id in set(team_ids)))
