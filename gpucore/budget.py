"""What a request does to its team's month: GPU-hours and cost this calendar month, and the budget left. Pure.

A team's budget is in GPU-hours per calendar month (whole-GPU equivalents: a MIG slice or a time-sliced share
counts its GPU share, as in the monthly report). A request that would start now holds its GPU share per unit x its
units every hour until it ends (its duration, its expiry, or with neither, the month's end); only the hours that fall
in this month count against this month's budget. Money is ``Decimal``, rounded only at presentation.

A team may also have a budget in money per calendar month (``MoneyBudgetState``): spend so far against it, the
thresholds crossed (50/80/100 % by default) and a run-rate projection to the month's end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum

from gpucore.chargeback import ChargeLine, hours_between
from gpucore.pricing import HOURS_PER_MONTH

SECONDS_PER_HOUR = Decimal(3600)


@dataclass(frozen=True, slots=True)
class BudgetEffect:
    """A request's hours, GPU-hours and cost this month, and the team's budget before and after it."""

    hours_this_month: Decimal  # wall-clock hours of the request that fall in this month
    gpu_hours_this_month: Decimal  # whole-GPU equivalents
    cost_this_month: Decimal | None  # None when the request has no price
    month_to_date_gpu_hours: Decimal
    month_to_date_cost: Decimal
    budget_gpu_hours: Decimal | None  # None: the team has no budget
    runs_to_month_end: bool  # no duration nor expiry: counted to the end of the month

    @property
    def budget_left_gpu_hours(self) -> Decimal | None:
        """The GPU-hours left of the month's budget once this request is counted (negative: over budget)."""
        if self.budget_gpu_hours is None:
            return None
        return self.budget_gpu_hours - self.month_to_date_gpu_hours - self.gpu_hours_this_month

    @property
    def over_budget_gpu_hours(self) -> Decimal:
        """How many GPU-hours this request would take the month over its budget (0 when it fits)."""
        left = self.budget_left_gpu_hours
        return Decimal(0) if left is None or left >= 0 else -left

    @property
    def fits_budget(self) -> bool:
        """Whether the month's budget holds this request too (always, without a budget)."""
        left = self.budget_left_gpu_hours
        return left is None or left >= 0


def gpu_hours_per_hour(*, gpu_share: Decimal, quantity: int, replicas: int) -> Decimal:
    """Whole-GPU equivalents a request holds each hour: its GPU share per unit x units per replica x replicas."""
    return gpu_share * Decimal(quantity) * Decimal(replicas)


def hours_in_month(
    *, start: datetime, month_end: datetime, duration_hours: Decimal | None, ends_at: datetime | None = None
) -> tuple[Decimal, bool]:
    """Hours from ``start`` to the request's end (duration, else ``ends_at``), cut at ``month_end``; and whether it
    simply runs to the month's end for lack of either."""
    end = month_end
    open_ended = duration_hours is None and ends_at is None
    if duration_hours is not None:
        end = min(month_end, start + timedelta(seconds=float(duration_hours * SECONDS_PER_HOUR)))
    elif ends_at is not None:
        end = min(month_end, ends_at)
    seconds = max(Decimal(0), Decimal(str((end - start).total_seconds())))
    hours = seconds / SECONDS_PER_HOUR
    if duration_hours is not None:
        hours = min(hours, duration_hours)  # no float noise beyond the duration itself
    return hours, open_ended


def budget_effect(
    *,
    gpu_share: Decimal,
    quantity: int,
    replicas: int,
    monthly_cost: Decimal | None,
    start: datetime,
    month_end: datetime,
    duration_hours: Decimal | None,
    ends_at: datetime | None = None,
    month_to_date_gpu_hours: Decimal,
    month_to_date_cost: Decimal,
    budget_gpu_hours: Decimal | None,
) -> BudgetEffect:
    """The effect on this month of a request starting at ``start``; ``monthly_cost`` is its 730-hour cost."""
    hours, open_ended = hours_in_month(start=start, month_end=month_end, duration_hours=duration_hours, ends_at=ends_at)
    cost = None if monthly_cost is None else monthly_cost / HOURS_PER_MONTH * hours
    return BudgetEffect(
        hours_this_month=hours,
        gpu_hours_this_month=gpu_hours_per_hour(gpu_share=gpu_share, quantity=quantity, replicas=replicas) * hours,
        cost_this_month=cost,
        month_to_date_gpu_hours=month_to_date_gpu_hours,
        month_to_date_cost=month_to_date_cost,
        budget_gpu_hours=budget_gpu_hours,
        runs_to_month_end=open_ended,
    )


# --- A team's budget in money: spend so far, the run-rate projection to month end, thresholds crossed -------------

DEFAULT_THRESHOLDS_PCT: tuple[int, ...] = (50, 80, 100)
RUN_RATE_WINDOW_HOURS = Decimal(24)  # the pace a projection extrapolates: the last day's spend


class BudgetLevel(StrEnum):
    """How a team's month stands against its money budget, from calm to over."""

    NONE = "none"  # no budget set
    OK = "ok"
    PROJECTED_OVER = "projected_over"  # under budget now, over by the month's end at the current run rate
    WARNING = "warning"  # a threshold below 100 % crossed
    OVER = "over"  # the whole budget spent (or more)


@dataclass(frozen=True, slots=True)
class MoneyBudgetState:
    """A team's spend this month against its money budget, with the month-end projection at the month's run rate."""

    spent: Decimal
    budget: Decimal | None  # None: no budget
    projected: Decimal  # spend at month end if the recent run rate (the last day's) holds
    thresholds_pct: tuple[int, ...]
    elapsed_hours: Decimal
    month_hours: Decimal

    @property
    def used_pct(self) -> Decimal | None:
        """Spend as a percentage of the budget (None without a budget or with a zero budget)."""
        return None if not self.budget else self.spent / self.budget * 100

    @property
    def projected_pct(self) -> Decimal | None:
        """The month-end projection as a percentage of the budget."""
        return None if not self.budget else self.projected / self.budget * 100

    @property
    def left(self) -> Decimal | None:
        """Budget left this month (negative: over)."""
        return None if self.budget is None else self.budget - self.spent

    @property
    def crossed_pct(self) -> tuple[int, ...]:
        """The thresholds the spend has reached, lowest first."""
        if self.budget is None:
            return ()
        return thresholds_crossed(spent=self.spent, budget=self.budget, thresholds_pct=self.thresholds_pct)

    @property
    def level(self) -> BudgetLevel:
        """The one word a page colours the budget by."""
        if self.budget is None:
            return BudgetLevel.NONE
        if self.spent > 0 and self.spent >= self.budget:
            return BudgetLevel.OVER  # the whole budget is spent
        if any(pct < 100 for pct in self.crossed_pct):
            return BudgetLevel.WARNING
        if self.projected > self.budget:
            return BudgetLevel.PROJECTED_OVER
        return BudgetLevel.OK


def run_rate_projection(
    *, spent: Decimal, recent_spend: Decimal, recent_hours: Decimal, remaining_hours: Decimal
) -> Decimal:
    """Spend at month end if the recent pace holds: spent + recent spend / recent hours x the hours left.

    With less than an hour to measure a pace by, the projection is what was spent.
    """
    if recent_hours < 1 or remaining_hours <= 0:
        return spent
    return spent + recent_spend * remaining_hours / recent_hours  # multiply first: exact for whole numbers


def spend_between(lines: Iterable[ChargeLine], *, start: datetime, end: datetime) -> Decimal:
    """What chargeback lines cost within [start, end): each line's amount is spread evenly over its hours."""
    total = Decimal(0)
    for line in lines:
        overlap = hours_between(max(line.start, start), min(line.end, end))
        if overlap > 0 and line.hours > 0:
            total += line.amount * overlap / line.hours
    return total


def thresholds_crossed(*, spent: Decimal, budget: Decimal, thresholds_pct: Iterable[int]) -> tuple[int, ...]:
    """Thresholds (percent of ``budget``) that ``spent`` has reached; a zero budget is crossed by any spend."""
    if budget <= 0:
        return tuple(sorted(set(thresholds_pct))) if spent > 0 else ()
    return tuple(pct for pct in sorted(set(thresholds_pct)) if spent * 100 >= budget * pct)


def money_budget_state(
    *,
    spent: Decimal,
    budget: Decimal | None,
    month_start: datetime,
    month_end: datetime,
    now: datetime,
    thresholds_pct: Iterable[int] = DEFAULT_THRESHOLDS_PCT,
    recent_spend: Decimal | None = None,
) -> MoneyBudgetState:
    """The state of a month's money budget at ``now`` (clamped to the month).

    The pace is ``recent_spend``, what the last ``RUN_RATE_WINDOW_HOURS`` (or the month so far, if shorter) cost:
    a team that started a big job yesterday is projected at yesterday's burn, not at the month's average. Without
    it, the month's average pace.
    """
    month_hours = Decimal(str((month_end - month_start).total_seconds())) / SECONDS_PER_HOUR
    clamped = min(max(now, month_start), month_end)
    elapsed = Decimal(str((clamped - month_start).total_seconds())) / SECONDS_PER_HOUR
    if recent_spend is None:
        recent_spend, recent_hours = spent, elapsed
    else:
        recent_hours = min(RUN_RATE_WINDOW_HOURS, elapsed)
    return MoneyBudgetState(
        spent=spent,
        budget=budget,
        projected=run_rate_projection(
            spent=spent, recent_spend=recent_spend, recent_hours=recent_hours, remaining_hours=month_hours - elapsed
        ),
        thresholds_pct=tuple(sorted(set(thresholds_pct))),
        elapsed_hours=elapsed,
        month_hours=month_hours,
    )
