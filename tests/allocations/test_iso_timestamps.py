"""``prepared_cursor(connection, timestamps=ISO_UTC_TIMESTAMPS)``: the requests API reads timestamps as the text
DRF answers for them in UTC (#15).

Each form PostgreSQL writes (no fraction, a fraction with its trailing zeros left out, a year under 1000) must be
DRF's own text for the same instant; any other form (the session in another zone) is read as the datetime it is.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from rest_framework import serializers

from allocations.prepared_cursors import DATETIME_TIMESTAMPS, ISO_UTC_TIMESTAMPS, prepared_cursor

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's text form of a timestamp"),
]


def _read(literal: str, *, as_text: bool, zone: str = "UTC") -> object:
    with prepared_cursor(connection, timestamps=ISO_UTC_TIMESTAMPS if as_text else DATETIME_TIMESTAMPS) as cursor:
        cursor.execute(f"SET LOCAL TIME ZONE '{zone}'")
        cursor.execute("SELECT %s::timestamptz", [literal])
        return cursor.fetchone()[0]


@pytest.mark.parametrize(
    "literal",
    [
        "2026-11-24 14:15:54+00",
        "2026-11-24 14:15:54.12+00",
        "2026-11-24 14:15:54.000001+00",
        "2026-11-24 14:15:54.999999+00",
        "2026-03-29 02:30:00.5+05:30",
        "0999-01-02 03:04:05.5+00",
    ],
)
def test_a_timestamp_reads_as_drfs_utc_text_for_it(literal):
    instant = _read(literal, as_text=False)
    assert isinstance(instant, datetime)

    text = _read(literal, as_text=True)

    assert text == serializers.DateTimeField(default_timezone=UTC).to_representation(instant)


def test_in_another_session_zone_it_reads_the_datetime():
    value = _read("2026-11-24 14:15:54.25+00", as_text=True, zone="Asia/Kolkata")

    assert value == datetime(2026, 11, 24, 14, 15, 54, 250000, tzinfo=UTC)


def test_null_stays_none():
    with prepared_cursor(connection, timestamps=ISO_UTC_TIMESTAMPS) as cursor:
        cursor.execute("SELECT NULL::timestamptz")
        assert cursor.fetchone()[0] is None
