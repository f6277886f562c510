"""Text written into HTML built in Python (the tables' rows, the queue's panels, the page header): what the template
engine's ``{{ }}`` and Django's ``escape`` print, without the lazy-text wrapper ``escape`` runs on every call."""

from __future__ import annotations

import html
from typing import Any

from django.conf import settings
from django.template import Context
from django.template.base import render_value_in_context
from django.template.defaultfilters import floatformat
from django.utils.formats import number_format

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


def float_format(value: Any, arg: str | int = -1) -> str:
    """``{{ value|floatformat:arg }}``: Django's ``floatformat``, with a whole number (an ``int``) shown to no decimal
    places printed without its Decimal arithmetic, the same text: the approval queue's counts and hours went through
    it ten times a page (issue #15)."""
    if type(value) is int:
        text, grouping, localized = str(arg), False, True
        if text[-2:] in ("gu", "ug"):
            text, grouping, localized = text[:-2] or "-1", True, False
        elif text[-1:] == "g":
            text, grouping = text[:-1] or "-1", True
        elif text[-1:] == "u":
            text, localized = text[:-1] or "-1", False
        try:
            places = int(text)
        except ValueError:
            places = 1  # not a number of places: Django's own answer
        if places <= 0:
            return number_format(str(value), 0, use_l10n=localized, force_grouping=grouping)
    return floatformat(value, arg)
