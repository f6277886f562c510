"""The API's filter backend (infra.filtering): a FilterSet only for a query string that names one of its filters."""

from __future__ import annotations

import pytest

from infra.filtering import asks_for_a_filter

FILTERS = ("status", "team", "created_after", "created_before", "price")


@pytest.mark.parametrize(
    ("params", "asked"),
    [
        ([], False),
        (["page", "page_size", "brief", "fields", "ordering", "search", "after"], False),
        (["status"], True),
        (["created_after"], True),
        (["price_min"], True),  # a range widget's suffix
        (["page", "team"], True),
        (["teams"], False),  # another name that only starts like one
    ],
)
def test_a_filter_is_asked_for_by_its_name_or_its_name_with_a_suffix(params: list[str], asked: bool) -> None:
    assert asks_for_a_filter(params, FILTERS) is asked
