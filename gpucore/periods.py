"""Splitting a time range into whole UTC months, whole UTC days and leftover hours.

Usage totals are kept at three grains (hourly rollups, daily and monthly aggregates); a range is read from the
coarsest grain that fits inside it: whole months from the monthly totals, whole days from the daily ones, the
ragged ends from the hourly rows. ``cover(start, end)`` says which pieces those are; the pieces never overlap
and together are exactly [start, end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta


@dataclass(frozen=True)
class Cover:
    """[start, end) as whole months (first days), whole days and leftover [from, to) spans of hours."""

    months: list[date] = field(default_factory=list)
    days: list[date] = field(default_factory=list)
    hour_spans: list[tuple[datetime, datetime]] = field(default_factory=list)


def midnight(day: date) -> datetime:
    """The UTC midnight that starts ``day``."""
    return datetime.combine(day, time(0), tzinfo=UTC)


def next_month_start(day: date) -> date:
    return date(day.year + (day.month == 12), day.month % 12 + 1, 1)


def cover(start: datetime, end: datetime) -> Cover:
    """The months, days and hour spans that make up [start, end) (aware datetimes; empty when end <= start)."""
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    if end <= start:
        return Cover()
    first_day = start.date() if start == midnight(start.date()) else start.date() + timedelta(days=1)
    last_day = end.date()  # exclusive: the day ``end`` falls in is at most partly covered
    if first_day >= last_day:
        return Cover(hour_spans=[(start, end)])
    spans = []
    if start < midnight(first_day):
        spans.append((start, midnight(first_day)))
    if midnight(last_day) < end:
        spans.append((midnight(last_day), end))
    months: list[date] = []
    days: list[date] = []
    day = first_day
    while day < last_day:
        month_end = next_month_start(day)
        if day.day == 1 and month_end <= last_day:
            months.append(day)
            day = month_end
        else:
            days.append(day)
            day += timedelta(days=1)
    return Cover(months=months, days=days, hour_spans=spans)
