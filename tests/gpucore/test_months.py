"""The one YYYY-MM parser: strict, so ``26-1`` is refused everywhere instead of meaning year 26."""

from __future__ import annotations

from datetime import date

import pytest

from gpucore.months import MonthError, parse_month


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2026-10", date(2026, 10, 1)), ("2026-01", date(2026, 1, 1)), (" 1999-12 ", date(1999, 12, 1))],
)
def test_a_month_is_the_first_day_of_it(text: str, expected: date) -> None:
    assert parse_month(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "26-1",
        "2026-1",
        "2026-13",
        "2026-00",
        "0000-05",
        "2026-10-01",
        "2026/10",
        "October",
        "",
        "\u0662\u0660\u0662\u0666-\u0661\u0660",
    ],
)
def test_anything_else_is_refused_with_the_expected_shape(text: str) -> None:
    with pytest.raises(MonthError, match="YYYY-MM"):
        parse_month(text)
