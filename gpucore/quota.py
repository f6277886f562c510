"""Quota arithmetic of a Kueue cohort: how much one member may still use, and whether an ask fits or borrows. Pure.

Kueue's ClusterQueue semantics (docs/reference-sources.md#kueue, from the concepts pages and the scheduler's
``available()`` over the cohort tree), for one (flavor, resource) of a flat cohort:

- a member *guarantees* itself ``nominal - lendingLimit`` (0 without a lending limit): that part is never lent;
- the cohort holds everyone's lendable quota (``nominal - guaranteed``) and counts usage beyond each guarantee;
- a member may use its unused guarantee plus what the cohort has left, capped by ``nominal + borrowingLimit``
  (no cap when the borrowing limit is ``None``: Kueue's "no limit").

The docs' worked examples are this module's tests. The portal applies it with its own rule on top (only preemptible
tiers borrow, and a quota without a borrowing limit does not borrow at all): see ``allocations.teams.quotas``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


class QuotaError(ValueError):
    """Quota numbers Kueue would refuse (negative, or lending more than the nominal quota)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CohortMember:
    """One ClusterQueue's quota of one resource on one flavor, and the units it holds now."""

    nominal: int
    used: int = 0
    borrowing_limit: int | None = None
    lending_limit: int | None = None

    def __post_init__(self) -> None:
        for name in ("nominal", "used", "borrowing_limit", "lending_limit"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise QuotaError(f"{name} must be >= 0, not {value}.")
        if self.lending_limit is not None and self.lending_limit > self.nominal:
            raise QuotaError("lendingLimit must be less than or equal to the nominalQuota.")

    @property
    def guaranteed(self) -> int:
        """The part of the nominal quota never lent to the cohort."""
        return self.nominal - self.lending_limit if self.lending_limit is not None else 0

    @property
    def lendable(self) -> int:
        """The part of the nominal quota the cohort may lend to others while it is unused."""
        return self.nominal - self.guaranteed

    @property
    def used_in_cohort(self) -> int:
        """Usage beyond the guarantee: what this member draws from the cohort's pool."""
        return max(0, self.used - self.guaranteed)


def available(member: CohortMember, others: Iterable[CohortMember] = ()) -> int:
    """Units ``member`` may still admit: its unused guarantee plus the cohort's rest, within its borrowing limit."""
    members = [member, *others]
    cohort_left = sum(m.lendable for m in members) - sum(m.used_in_cohort for m in members)
    from_cohort = cohort_left
    if member.borrowing_limit is not None:
        ceiling = member.lendable - member.used_in_cohort + member.borrowing_limit
        from_cohort = min(from_cohort, ceiling)
    return max(0, member.guaranteed - member.used) + max(0, from_cohort)


@dataclass(frozen=True, slots=True)
class Admission:
    """Whether an ask fits, how many of its units are over the nominal quota (borrowed), and what was available."""

    fits: bool
    borrowed: int
    nominal_left: int
    available: int


def admit(member: CohortMember, others: Iterable[CohortMember], units: int, *, may_borrow: bool) -> Admission:
    """Admit ``units`` more within the nominal quota, or (``may_borrow``) by borrowing from the cohort."""
    if units < 0:
        raise QuotaError(f"units must be >= 0, not {units}.")
    nominal_left = max(0, member.nominal - member.used)
    if units <= nominal_left:
        return Admission(True, 0, nominal_left, nominal_left)
    reachable = available(member, others) if may_borrow else nominal_left
    if units > reachable:
        return Admission(False, 0, nominal_left, reachable)
    return Admission(True, units - nominal_left, nominal_left, reachable)
