"""``request_tables.time_since`` (unit texts kept per language and count) answers what Django's ``timesince`` does."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import translation
from django.utils.timesince import timesince

from allocations.request_tables import time_since

NOW = datetime(2026, 3, 31, 12, 30, 15, tzinfo=UTC)
DELTAS = [
    timedelta(0),
    timedelta(seconds=59),
    timedelta(minutes=1),
    timedelta(minutes=2, seconds=30),
    timedelta(hours=1),
    timedelta(hours=5, minutes=1),
    timedelta(days=1),
    timedelta(days=2, hours=23, minutes=59),
    timedelta(days=7),
    timedelta(days=13, hours=4),
    timedelta(days=31),
    timedelta(days=45, minutes=3),
    timedelta(days=365),
    timedelta(days=400, hours=1),
    timedelta(days=3 * 365 + 70),
    -timedelta(hours=3),  # the future: "0 minutes"
]


@pytest.mark.parametrize("language", ["en-us", "de", "fr", "ja"])
def test_the_same_text_as_timesince_in_every_language(language) -> None:
    with translation.override(language):
        for _ in range(2):  # translated, then kept
            for delta in DELTAS:
                then = NOW - delta
                assert time_since(then, NOW) == timesince(then, NOW)
                # Month ends and leap days: the calendar's arithmetic is timesince's own.
                for day in (datetime(2024, 2, 29, tzinfo=UTC), datetime(2026, 1, 31, 23, tzinfo=UTC)):
                    assert time_since(day - delta, day) == timesince(day - delta, day)


def test_a_language_gets_its_own_texts() -> None:
    then = NOW - timedelta(days=2, hours=3)
    with translation.override("en-us"):
        english = time_since(then, NOW)
    with translation.override("de"):
        german, expected = time_since(then, NOW), timesince(then, NOW)
    assert english == "2\xa0days, 3\xa0hours" and german == expected == "2\xa0Tage, 3\xa0Stunden"
