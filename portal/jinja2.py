"""The Jinja2 environment of the few hot tables rendered with Jinja2 (autoescape on; the rest of the portal is Django
templates): Django's URL reversing and the same filters the Django templates use, so a cell reads the same in both."""

from __future__ import annotations

from typing import Any

from django.template import defaultfilters
from django.urls import reverse

from jinja2 import Environment
from portal.templatetags.portal_format import gpu_hours, money


def url(name: str, *args: Any) -> str:
    """``{% url name arg ... %}``."""
    return reverse(name, args=args)


def environment(**options: Any) -> Environment:
    env = Environment(**options)  # noqa: S701 (Django's Jinja2 backend turns autoescape on unless told otherwise)
    env.globals.update(url=url)
    env.filters.update(
        money=money,
        gpu_hours=gpu_hours,
        floatformat=defaultfilters.floatformat,
        timesince=defaultfilters.timesince_filter,
        timeuntil=defaultfilters.timeuntil_filter,
        django_date=defaultfilters.date,
    )
    return env
