"""Capacity forecast: a least-squares linear trend over the last 7 days, projected 30 days, with a run-out date. Pure.

Guide Part 3.5 "7-Day Forecasting Model": ``linear_regression(x=time_points_24h_avg, y=values)``; the points are
24-hour averages of an hourly series, the x axis is days. A pool runs out on the day its allocation trend reaches
its capacity; a flat or falling trend never does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

HISTORY_DAYS = 7
HORIZON_DAYS = 30
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class Trend:
    """A fitted line ``value = intercept + slope_per_day x days since origin``."""

    origin: datetime
    intercept: float
    slope_per_day: float

    def at(self, when: datetime) -> float:
        """The trend's value at a time."""
        return self.intercept + self.slope_per_day * ((when - self.origin) / DAY)


@dataclass(frozen=True, slots=True)
class Forecast:
    """One series' history (daily means), trend, projection to the horizon, and when it reaches capacity."""

    history: tuple[tuple[datetime, float], ...]
    trend: Trend | None
    projection: tuple[tuple[datetime, float], ...]
    capacity: float | None
    run_out_at: datetime | None  # when the trend reaches capacity (now when it already has); None: never
    now: datetime

    @property
    def current(self) -> float | None:
        """The last daily mean."""
        return self.history[-1][1] if self.history else None

    @property
    def projected_end(self) -> float | None:
        """The trend's value at the end of the horizon."""
        return self.projection[-1][1] if self.projection else None

    @property
    def days_to_run_out(self) -> float | None:
        """Days from now until the run-out date (0 when already at capacity)."""
        if self.run_out_at is None:
            return None
        return max(0.0, (self.run_out_at - self.now) / DAY)

    @property
    def runs_out_within_horizon(self) -> bool:
        """True when the run-out date falls within the 30-day projection."""
        days = self.days_to_run_out
        return days is not None and days <= HORIZON_DAYS


def linear_trend(points: Sequence[tuple[datetime, float]], *, origin: datetime | None = None) -> Trend | None:
    """Ordinary least squares through the points (x in days from ``origin``); None with fewer than two times."""
    if not points:
        return None
    origin = origin or points[0][0]
    xs = [(when - origin) / DAY for when, _ in points]
    ys = [float(value) for _, value in points]
    n = len(xs)
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if sxx == 0:
        return None
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    return Trend(origin=origin, intercept=mean_y - slope * mean_x, slope_per_day=slope)


def daily_means(
    hourly: Sequence[tuple[datetime, float]], *, end: datetime, days: int = HISTORY_DAYS
) -> list[tuple[datetime, float]]:
    """24-hour means of an hourly series over the ``days`` days before ``end``, each placed at its day's middle.

    A day with no point is left out (unknown), never read as zero.
    """
    start = end - DAY * days
    buckets: dict[int, list[float]] = {}
    for when, value in hourly:
        if start <= when < end:
            buckets.setdefault(int((when - start) / DAY), []).append(float(value))
    return [(start + DAY * index + DAY / 2, sum(vals) / len(vals)) for index, vals in sorted(buckets.items())]


def run_out(trend: Trend | None, *, capacity: float | None, now: datetime) -> datetime | None:
    """When the trend reaches capacity: now if it already has, None when it is flat or falling or capacity unknown."""
    if trend is None or capacity is None:
        return None
    if trend.at(now) >= capacity:
        return now
    if trend.slope_per_day <= 0:
        return None
    days = (capacity - trend.intercept) / trend.slope_per_day
    # A near-flat trend (float noise in a constant series) lands past any date a calendar holds: never.
    if days >= (datetime.max.replace(tzinfo=trend.origin.tzinfo) - trend.origin) / DAY:
        return None
    return trend.origin + DAY * days


def forecast(
    hourly: Sequence[tuple[datetime, float]],
    *,
    now: datetime,
    capacity: float | None = None,
    history_days: int = HISTORY_DAYS,
    horizon_days: int = HORIZON_DAYS,
) -> Forecast:
    """Fit the daily means of the last ``history_days`` and project them daily ``horizon_days`` ahead of ``now``."""
    history = daily_means(hourly, end=now, days=history_days)
    trend = linear_trend(history)
    projection: tuple[tuple[datetime, float], ...] = ()
    if trend is not None:
        # A falling trend stops at zero: nothing is held or busy below none.
        projection = tuple((now + DAY * day, max(0.0, trend.at(now + DAY * day))) for day in range(horizon_days + 1))
    return Forecast(
        history=tuple(history),
        trend=trend,
        projection=projection,
        capacity=capacity,
        run_out_at=run_out(trend, capacity=capacity, now=now),
        now=now,
    )


def step_series(
    intervals: Sequence[tuple[datetime, datetime | None, float]], *, start: datetime, end: datetime
) -> list[tuple[datetime, float]]:
    """An hourly series of the amount held at each hour start in [start, end) from (from, until, amount) holdings.

    ``until`` None means still held. Each holding adds its amount where it starts to count and takes it away where it
    stops, and the hours read the running total: linear in holdings plus hours, where summing every holding at every
    hour is too slow for a busy pool's week. Whole amounts (units, as the pools hold) add up
    exactly; any other amount is summed per hour, in the holdings' order, as before.
    """

    def hours_before(moment: datetime) -> int:
        """How many hour starts from ``start`` on lie before ``moment`` (none before ``start``)."""
        return max(0, -((start - moment) // HOUR))

    count = hours_before(end)  # the hour starts in [start, end)
    if not all(float(amount).is_integer() for _, _, amount in intervals):
        return _summed_per_hour(intervals, start=start, count=count)
    changes = [0] * (count + 1)
    for since, until, amount in intervals:
        # Held from the first hour start at or after `since` up to the last one before `until`.
        first, stop = hours_before(since), count if until is None else min(count, hours_before(until))
        if first < stop:
            changes[first] += int(amount)
            changes[stop] -= int(amount)
    series, held = [], 0
    for index in range(count):
        held += changes[index]
        series.append((start + HOUR * index, float(held)))
    return series


def _summed_per_hour(
    intervals: Sequence[tuple[datetime, datetime | None, float]], *, start: datetime, count: int
) -> list[tuple[datetime, float]]:
    series = []
    for index in range(count):
        hour = start + HOUR * index
        held = sum(amount for since, until, amount in intervals if since <= hour and (until is None or until > hour))
        series.append((hour, float(held)))
    return series


def forecast_as_json(item: Forecast) -> dict[str, object]:
    """The forecast as JSON-ready values (times as ISO 8601), read back by ``forecast_from_json``."""
    trend = item.trend
    return {
        "history": [[when.isoformat(), value] for when, value in item.history],
        "trend": [trend.origin.isoformat(), trend.intercept, trend.slope_per_day] if trend else None,
        "projection": [[when.isoformat(), value] for when, value in item.projection],
        "capacity": item.capacity,
        "run_out_at": item.run_out_at.isoformat() if item.run_out_at else None,
        "now": item.now.isoformat(),
    }


def forecast_from_json(data: dict) -> Forecast:
    """The forecast ``forecast_as_json`` wrote."""
    trend = data["trend"]
    return Forecast(
        history=tuple((datetime.fromisoformat(when), float(value)) for when, value in data["history"]),
        trend=Trend(datetime.fromisoformat(trend[0]), float(trend[1]), float(trend[2])) if trend else None,
        projection=tuple((datetime.fromisoformat(when), float(value)) for when, value in data["projection"]),
        capacity=data["capacity"],
        run_out_at=datetime.fromisoformat(data["run_out_at"]) if data["run_out_at"] else None,
        now=datetime.fromisoformat(data["now"]),
    )
