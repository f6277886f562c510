"""Text written into HTML built in Python (the tables' rows, the queue's panels, the page header): what the template
engine's ``{{ }}`` and Django's ``escape`` print, without the lazy-text wrapper ``escape`` runs on every call."""

from __future__ import annotations

import html
from typing import Any

from django.conf import settings
from django.template import Context
from django.template.base import render_value_in_context

_SHOWN = Context()


def escaped(value: object) -> str:
    """``django.utils.html.escape(value)``: the value's text with ``& < > " '`` written as entities (``html.escape``,
    which Django's calls), a third of the cost; the page of 26 queue rows escaped ~300 values (issue #15)."""
    return html.escape(str(value))


def shown(value: Any) -> str:
    """``{{ value }}``: localised, in the current time zone, escaped."""
    kind = type(value)
    if kind is str:  # what localisation and the time zone leave as it is
        return escaped(value)
    if kind is int and not settings.USE_THOUSAND_SEPARATOR:  # localize() prints an int as str() does then
        return str(value)
    return render_value_in_context(value, _SHOWN)


def width_ratio(value: float, max_value: float) -> str:
    """``{% widthratio value max_value 100 %}``: the percentage, rounded, "0" for a zero maximum (a bar's width)."""
    try:
        return str(round(float(value) / float(max_value) * 100))
    except ZeroDivisionError:
        return "0"
    except (ValueError, TypeError, OverflowError):
        return ""
