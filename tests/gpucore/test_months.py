"""The one YYYY-MM parser: strict, so ``26-1`` is refused everywhere instead of meaning year 26."""

from __future__ import annotations

from datetime import date

import pytest

from gpucore.months import MonthError, add_months, month_range, parse_month, parse_quarter, quarter_label


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


def test_quarters_ranges_and_month_arithmetic() -> None:
    assert parse_quarter("2026-Q4") == date(2026, 10, 1) and parse_quarter("2026-q1") == date(2026, 1, 1)
    for bad in ("2026-Q5", "2026-4", "Q4-2026", "0000-Q1"):
        with pytest.raises(MonthError, match="YYYY-Qn"):
            parse_quarter(bad)
    assert add_months(date(2026, 11, 5), 2) == date(2027, 1, 1) and add_months(date(2026, 1, 1), -1) == date(
        2025, 12, 1
    )
    assert month_range(date(2026, 11, 1), date(2027, 2, 1)) == [date(2026, 11, 1), date(2026, 12, 1),
                                                                date(2027, 1, 1), date(2027, 2, 1)]  # fmt: skip
    assert month_range(date(2026, 3, 1), date(2026, 2, 1)) == []
    assert quarter_label(date(2026, 12, 31)) == "2026-Q4"
