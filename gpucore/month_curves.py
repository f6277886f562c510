"""A month's chargeback as functions of time, so the month so far at any moment is a lookup, not a chargeback. Pure.

``compute_chargeback`` over [month start, t) gives each team's spend up to ``t``. Over the whole month, with the
allocations still held running to the month's end, its lines hold the same answer for every ``t`` at once: each line
adds its hourly amount from its start until ``min(end, t)``. ``CumulativeCurve`` keeps such a sum as a
piecewise-linear function of ``t`` (breaks where lines start and end), so a team's month so far, and its spend of
the last day (the run-rate), cost two bisections instead of a chargeback over every allocation of the month, which
is too slow for every home page once thousands of requests are held. The idle capacity and its weighted
sharing are worked out at ``t`` from the capacity and the per-model curves, as ``compute_chargeback`` does.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal

from gpucore.chargeback import ZERO, Chargeback, ChargeLine, PricePeriod, capacity_cost, hours_between
from gpucore.pricing import weighted_shares


@dataclass(frozen=True, slots=True)
class CumulativeCurve:
    """A quantity accrued over time at piecewise-constant hourly rates: ``at(t)`` is the total accrued before ``t``.

    ``values[i]`` is the total at ``times[i]``, and from there it grows by ``slopes[i]`` per hour until
    ``times[i + 1]``; before ``times[0]`` it is zero.
    """

    times: tuple[datetime, ...] = ()
    values: tuple[Decimal, ...] = ()
    slopes: tuple[Decimal, ...] = ()

    @classmethod
    def of_spans(cls, spans: Iterable[tuple[datetime, datetime, Decimal]]) -> CumulativeCurve:
        """The running total of ``(start, end, per hour)`` spans, each accruing its rate over [start, end)."""
        changes: dict[datetime, Decimal] = defaultdict(lambda: ZERO)
        for start, end, per_hour in spans:
            if end > start and per_hour:
                changes[start] += per_hour
                changes[end] -= per_hour
        times = sorted(changes)
        values, slopes = [], []
        value = slope = ZERO
        for index, moment in enumerate(times):
            if index:
                value += slope * hours_between(times[index - 1], moment)
            slope += changes[moment]
            values.append(value)
            slopes.append(slope)
        return cls(tuple(times), tuple(values), tuple(slopes))

    def at(self, moment: datetime) -> Decimal:
        """The total accrued before ``moment``."""
        index = bisect_right(self.times, moment) - 1
        if index < 0:
            return ZERO
        return self.values[index] + self.slopes[index] * hours_between(self.times[index], moment)

    def between(self, start: datetime, end: datetime) -> Decimal:
        """What accrued in [start, end) (zero when ``end`` is not after ``start``)."""
        return self.at(end) - self.at(start) if end > start else ZERO


def _line_rates(line: ChargeLine) -> tuple[Decimal, Decimal, Decimal]:
    """Per hour of the line: whole-GPU equivalents, amount (SLA multiplier included) and base amount (without)."""
    gpu_hours = Decimal(line.allocation.units) * line.unit_share
    return gpu_hours, gpu_hours * line.rate, gpu_hours * line.gpu_rate


@dataclass(frozen=True, slots=True)
class TeamSoFar:
    """One team's chargeback from the month's start to a moment: whole-GPU hours, amount and share of idle cost."""

    gpu_hours: Decimal = ZERO
    amount: Decimal = ZERO  # allocations at their rates, SLA multipliers included; no idle share
    idle_share: Decimal = ZERO
    recent_amount: Decimal = ZERO  # the part of ``amount`` spent since ``so_far``'s ``recent_since``

    @property
    def total(self) -> Decimal:
        return self.amount + self.idle_share


@dataclass(frozen=True)
class MonthSoFar:
    """The month's chargeback from its start to ``end``: each team's figures and the idle cost per GPU model."""

    start: datetime
    end: datetime
    teams: dict[str, TeamSoFar]
    idle_cost: dict[str, Decimal]
    idle_shared: bool

    @property
    def total_idle_cost(self) -> Decimal:
        return sum(self.idle_cost.values(), ZERO)


@dataclass(frozen=True)
class MonthCurves:
    """A month's chargeback as curves of time: per team (GPU-hours, amount) and per GPU model (base amount, and per
    team when idle cost is shared), with the capacity and prices the idle cost needs."""

    start: datetime
    end: datetime
    team_gpu_hours: Mapping[str, CumulativeCurve]
    team_amount: Mapping[str, CumulativeCurve]
    model_base: Mapping[str, CumulativeCurve]  # casefolded model name -> base amount of every team's allocations
    model_team_base: Mapping[str, Mapping[str, CumulativeCurve]]  # only when idle cost is shared
    model_names: Mapping[str, str]  # casefolded -> as the capacity names it
    capacity_gpus: Mapping[str, int]
    periods: Sequence[PricePeriod]
    fallback_rates: Mapping[str, Decimal] = field(default_factory=dict)
    share_idle: bool = False

    @classmethod
    def of_chargeback(
        cls,
        chargeback: Chargeback,
        *,
        capacity_gpus: Mapping[str, int],
        periods: Sequence[PricePeriod],
        fallback_rates: Mapping[str, Decimal] | None = None,
    ) -> MonthCurves:
        """The curves of a chargeback over the whole month in which allocations still held run to its end."""
        gpu_hours: dict[str, list] = defaultdict(list)
        amount: dict[str, list] = defaultdict(list)
        model_base: dict[str, list] = defaultdict(list)
        model_team_base: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
        names: dict[str, str] = {}
        for team, charge in chargeback.teams.items():
            for line in charge.lines:
                hours, money, base = _line_rates(line)
                key = line.allocation.gpu_model.casefold()
                names.setdefault(key, line.allocation.gpu_model)
                gpu_hours[team].append((line.start, line.end, hours))
                amount[team].append((line.start, line.end, money))
                model_base[key].append((line.start, line.end, base))
                if chargeback.idle_shared:
                    model_team_base[key][team].append((line.start, line.end, base))
        for model in capacity_gpus:
            names.setdefault(model.casefold(), model)
        return cls(
            start=chargeback.start,
            end=chargeback.end,
            team_gpu_hours={team: CumulativeCurve.of_spans(spans) for team, spans in gpu_hours.items()},
            team_amount={team: CumulativeCurve.of_spans(spans) for team, spans in amount.items()},
            model_base={key: CumulativeCurve.of_spans(spans) for key, spans in model_base.items()},
            model_team_base={
                key: {team: CumulativeCurve.of_spans(spans) for team, spans in teams.items()}
                for key, teams in model_team_base.items()
            },
            model_names=names,
            capacity_gpus=dict(capacity_gpus),
            periods=tuple(periods),
            fallback_rates=dict(fallback_rates or {}),
            share_idle=chargeback.idle_shared,
        )

    def so_far(
        self, moment: datetime, *, teams: Iterable[str] = (), recent_since: datetime | None = None
    ) -> MonthSoFar:
        """The chargeback from the month's start to ``moment`` (clamped to the month), as ``compute_chargeback`` over
        that window gives it; ``teams`` are listed even without allocations; each team's ``recent_amount`` is what
        it spent from ``recent_since`` (the run-rate's window) to then."""
        end = min(self.end, max(moment, self.start))
        result = {
            team: TeamSoFar(
                gpu_hours=self.team_gpu_hours[team].at(end),
                amount=curve.at(end),
                recent_amount=curve.between(recent_since, end) if recent_since is not None else ZERO,
            )
            for team, curve in self.team_amount.items()
        }
        idle_shares: dict[str, Decimal] = defaultdict(lambda: ZERO)
        idle: dict[str, Decimal] = {}
        for model, gpus in self.capacity_gpus.items():
            key = model.casefold()
            capacity = capacity_cost(
                gpus,
                model,
                window_start=self.start,
                window_end=end,
                periods=self.periods,
                fallback_rates=self.fallback_rates,
            )
            base = self.model_base[key].at(end) if key in self.model_base else ZERO
            # Allocations beyond the configured capacity (e.g. imported history) leave no idle, never a negative one.
            idle[key] = max(capacity - base, ZERO)
            if self.share_idle:
                weights = {team: curve.at(end) for team, curve in self.model_team_base.get(key, {}).items()}
                for team, share in weighted_shares(idle[key], {t: w for t, w in weights.items() if w}).items():
                    idle_shares[team] += share
        for team, share in idle_shares.items():
            result[team] = replace(result.get(team, TeamSoFar()), idle_share=share)
        for team in teams:
            result.setdefault(team, TeamSoFar())
        return MonthSoFar(
            start=self.start,
            end=end,
            teams=result,
            idle_cost={self.model_names[key]: value for key, value in idle.items()},
            idle_shared=self.share_idle,
        )


__all__ = ["CumulativeCurve", "MonthCurves", "MonthSoFar", "TeamSoFar"]
