"""Splitting a range into whole months, whole days and leftover hours: pieces that never overlap and add up."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from gpucore.periods import cover


def _hours(piece_cover) -> float:
    total = 0.0
    for month in piece_cover.months:
        nxt = date(month.year + (month.month == 12), month.month % 12 + 1, 1)
        total += (nxt - month).days * 24
    total += len(piece_cover.days) * 24
    total += sum((b - a).total_seconds() / 3600 for a, b in piece_cover.hour_spans)
    return total


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (datetime(2026, 9, 29, 5, 30, tzinfo=UTC), datetime(2026, 12, 3, 7, tzinfo=UTC)),
        (datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)),
        (datetime(2026, 12, 15, tzinfo=UTC), datetime(2027, 2, 1, tzinfo=UTC)),
        (datetime(2026, 10, 3, 2, tzinfo=UTC), datetime(2026, 10, 3, 9, tzinfo=UTC)),
    ],
)
def test_the_pieces_add_up_to_the_range(start: datetime, end: datetime) -> None:
    assert _hours(cover(start, end)) == (end - start).total_seconds() / 3600


def test_whole_months_are_read_as_months_and_the_ragged_ends_as_hours() -> None:
    got = cover(datetime(2026, 9, 29, 5, tzinfo=UTC), datetime(2026, 11, 2, 7, tzinfo=UTC))
    assert got.months == [date(2026, 10, 1)]
    assert got.days == [date(2026, 9, 30), date(2026, 11, 1)]
    assert got.hour_spans == [
        (datetime(2026, 9, 29, 5, tzinfo=UTC), datetime(2026, 9, 30, tzinfo=UTC)),
        (datetime(2026, 11, 2, tzinfo=UTC), datetime(2026, 11, 2, 7, tzinfo=UTC)),
    ]


def test_an_empty_or_backwards_range_has_no_pieces() -> None:
    at = datetime(2026, 10, 1, tzinfo=UTC)
    assert cover(at, at) == cover(at, at - timedelta(hours=1)) == cover(at, at)
    assert not cover(at, at).hour_spans and not cover(at, at).days and not cover(at, at).months
