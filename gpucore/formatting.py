"""One voice for numbers people read: money as ``5,022.40 USD`` (cents, grouped thousands, the currency always
shown) and GPU-hours to one decimal (``1,234.5``). Pure; pages and e-mails use these through the ``money`` and
``gpu_hours`` template filters, and CSV files keep plain machine-readable numbers (no grouping, no currency)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from gpucore.pricing import to_cents

TENTHS = Decimal("0.1")


def _decimal(value: Any) -> Decimal | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value))
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def format_money(amount: Any, currency: str) -> str:
    """``5,022.40 USD``: half-up to the cent, thousands grouped, the currency code after; '' for no amount."""
    number = _decimal(amount)
    if number is None:
        return ""
    cents = to_cents(number)
    if cents == 0:
        cents = Decimal("0.00")  # never "-0.00"
    return f"{cents:,.2f} {currency}"


def format_money_value(value: Any, currency: str) -> str:
    """``format_money`` of an amount in ``currency``, or of a money mapping (``{"amount": ..., "currency": ...}``,
    the API's shape) in its own currency, ``currency`` when it names none."""
    if isinstance(value, Mapping):
        return format_money(value.get("amount"), str(value.get("currency") or currency))
    return format_money(value, currency)


def format_gpu_hours(value: Any) -> str:
    """GPU-hours to one decimal, thousands grouped (``1,234.5``); '' for no value."""
    number = _decimal(value)
    if number is None:
        return ""
    rounded = number.quantize(TENTHS, ROUND_HALF_UP)
    if rounded == 0:
        rounded = Decimal("0.0")
    return f"{rounded:,.1f}"
