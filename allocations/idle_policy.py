"""The idle reclaim thresholds in effect: the core's per-tier defaults, with the operator's settings over them."""

from __future__ import annotations

from dataclasses import fields, replace

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from gpucore.idle_reclaim import DEFAULT_THRESHOLDS, ReclaimThresholds, thresholds_for

_FIELDS = frozenset(field.name for field in fields(ReclaimThresholds))


def reclaim_enabled() -> bool:
    """Whether the idle reclaim policy runs at all (``IDLE_RECLAIM_ENABLED``)."""
    return bool(getattr(settings, "IDLE_RECLAIM_ENABLED", True))


def reclaim_thresholds_table() -> dict[str, ReclaimThresholds]:
    """Per tier slug (and ``default``), the thresholds: ``DEFAULT_THRESHOLDS`` with ``IDLE_RECLAIM_THRESHOLDS``
    applied field by field; an unknown field or a nonsensical value is a configuration error naming it."""
    table = dict(DEFAULT_THRESHOLDS)
    for tier, overrides in (getattr(settings, "IDLE_RECLAIM_THRESHOLDS", None) or {}).items():
        if not isinstance(overrides, dict) or not set(overrides) <= _FIELDS:
            raise ImproperlyConfigured(
                f"IDLE_RECLAIM_THRESHOLDS[{tier!r}] must be an object with keys among {', '.join(sorted(_FIELDS))}."
            )
        try:
            table[tier] = replace(table.get(tier, DEFAULT_THRESHOLDS["default"]), **overrides)
        except (TypeError, ValueError) as exc:
            raise ImproperlyConfigured(f"IDLE_RECLAIM_THRESHOLDS[{tier!r}]: {exc}") from exc
    return table


def reclaim_thresholds(tier_slug: str | None) -> ReclaimThresholds:
    """The thresholds for a request of ``tier_slug`` (None: no tier), off everywhere when the policy is off."""
    chosen = thresholds_for(tier_slug, reclaim_thresholds_table())
    return chosen if reclaim_enabled() else replace(chosen, enabled=False)
