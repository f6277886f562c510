"""Template filters for one voice across pages and e-mails (a builtin: no ``{% load %}`` needed).

``{{ amount|money }}`` in the portal's currency, ``{{ amount|money:"EUR" }}`` in another, and ``{{ money_dict|money }}``
for the API's ``{"amount": "...", "currency": "..."}`` shape; ``{{ hours|gpu_hours }}`` to one decimal.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template
from django.conf import settings

from gpucore.formatting import format_gpu_hours, format_money_value

register = template.Library()


@register.filter
def money(value: Any, currency: str | None = None) -> str:
    """An amount as ``5,022.40 USD`` (a money dict brings its own currency); '' when there is none."""
    return format_money_value(value, currency or settings.PORTAL_CURRENCY)


@register.filter
def number(value: Any) -> Any:
    """A number with thousands separators at the precision it has (``8,604.53``), so a table's figures read as
    its KPIs' do; anything else (text, None) unchanged."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return value
    return f"{value:,}"


@register.filter
def gpu_hours(value: Any) -> str:
    """GPU-hours to one decimal (``1,234.5``)."""
    return format_gpu_hours(value)
