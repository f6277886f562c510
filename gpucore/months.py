"""Calendar months as the portal writes them: the one strict ``YYYY-MM`` parser behind every ``month`` input.

``2026-10`` is October 2026. Anything else is refused rather than guessed: ``26-1`` is not year 26, ``2026-1`` is
not January, ``2026-13`` is no month. The API answers 400 naming ``month``; pages answer 400 too.
"""

from __future__ import annotations

import re
from datetime import date

_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")
# What ``parse_month`` accepts, as a JSON Schema pattern (a year from 0001, a month from 01 to 12).
MONTH_PATTERN = r"^(?!0000)[0-9]{4}-(0[1-9]|1[0-2])$"


class MonthError(ValueError):
    """Text that is not a ``YYYY-MM`` month; the message says what is expected."""


def parse_month(text: str) -> date:
    """``YYYY-MM`` (four-digit year, two-digit month 01-12) as the first day of that month; MonthError otherwise."""
    match = _MONTH.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise MonthError(f"Use YYYY-MM, not {text!r}.")
    year, month = int(match[1]), int(match[2])
    if year < 1 or not 1 <= month <= 12:
        raise MonthError(f"Use YYYY-MM with a year from 0001 and a month from 01 to 12, not {text!r}.")
    return date(year, month, 1)


_QUARTER = re.compile(r"([0-9]{4})-[Qq]([1-4])")


def parse_quarter(text: str) -> date:
    """``YYYY-Qn`` (n from 1 to 4) as the first day of the quarter's first month; MonthError otherwise."""
    match = _QUARTER.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None or int(match[1]) < 1:
        raise MonthError(f"Use YYYY-Qn with n from 1 to 4, not {text!r}.")
    return date(int(match[1]), 3 * int(match[2]) - 2, 1)


def add_months(month: date, count: int) -> date:
    """The first day of the month ``count`` months after (or before, when negative) the month of ``month``."""
    index = month.year * 12 + month.month - 1 + count
    return date(index // 12, index % 12 + 1, 1)


def month_range(first: date, last: date) -> list[date]:
    """First days of every month from ``first``'s to ``last``'s, both included (empty when last is before first)."""
    out: list[date] = []
    month = first.replace(day=1)
    while month <= last:
        out.append(month)
        month = add_months(month, 1)
    return out


def quarter_label(month: date) -> str:
    """``2026-Q4`` for any day of October to December 2026."""
    return f"{month.year}-Q{(month.month - 1) // 3 + 1}"
