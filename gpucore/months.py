"""Calendar months as the portal writes them: the one strict ``YYYY-MM`` parser behind every ``month`` input.

``2026-10`` is October 2026. Anything else is refused rather than guessed: ``26-1`` is not year 26, ``2026-1`` is
not January, ``2026-13`` is no month. The API answers 400 naming ``month``; pages answer 400 too.
"""

from __future__ import annotations

import re
from datetime import date

_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")


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
