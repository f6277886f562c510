"""``html_text.float_format`` prints what Django's ``floatformat`` prints, for whole numbers (its own fast path) and
everything else (Django's), in several languages, with and without thousands grouping."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from django.template.defaultfilters import floatformat
from django.utils import translation

from allocations.html_text import float_format

VALUES = [0, 1, -3, 7, 999, 1000, 12_345, -1_234_567, 10**12, Decimal("24.0"), Decimal("139.52"), 2.5, "", "x", None]
ARGS = ["g", "0g", "-2", "-1", "0", 0, -2, "2", 2, "u", "gu", "ug", "2g", "-3g", "x"]


@pytest.mark.parametrize("language", ["en", "de", "fr"])
@pytest.mark.parametrize("grouping", [False, True])
def test_the_same_text_as_djangos_floatformat(language, grouping, settings):
    settings.USE_THOUSAND_SEPARATOR = grouping
    with translation.override(language):
        for value, arg in itertools.product(VALUES, ARGS):
            assert float_format(value, arg) == floatformat(value, arg), (value, arg)
        assert float_format(1_234_567) == floatformat(1_234_567)
