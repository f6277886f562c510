"""Usage import never bills one allocation twice: duplicates and overlaps per team, request and resource are refused.

The same row twice in one file, two overlapping rows in one file, and a row overlapping one imported earlier are each
refused with both lines named, and nothing of the file is written (row counts equal before and after).
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from billing.costs.services import usage_import
from billing.models import ImportedUsage

pytestmark = pytest.mark.django_db

HEADER = "team,request,gpu_model,strategy,resource_name,quantity,time_slice_replicas,start,end,avg_utilization_pct\n"


def row(start: str, end: str, request: str = "old-1", resource: str = "nvidia.com/gpu", team: str = "vision") -> str:
    return f"{team},{request},H100-80GB,dedicated,{resource},1,,2026-10-{start}Z,2026-10-{end}Z,\n"


def refused(text: str) -> list[str]:
    before = ImportedUsage.objects.count()
    with pytest.raises(ValidationError) as info:
        usage_import(csv_text=text, source_name="october.csv")
    assert ImportedUsage.objects.count() == before
    return info.value.message_dict["rows"]


def test_the_same_row_twice_in_one_file_is_refused_naming_both_lines(demo_org) -> None:
    same = row("01T00:00:00", "02T00:00:00")
    (message,) = refused(HEADER + row("05T00:00:00", "06T00:00:00") + same + same)
    assert message.startswith("line 4: ") and "line 3" in message and "overlaps" in message


def test_overlapping_rows_in_one_file_are_refused_naming_both_lines(demo_org) -> None:
    text = HEADER + row("01T00:00:00", "03T00:00:00") + row("02T12:00:00", "04T00:00:00")
    (message,) = refused(text)
    assert message.startswith("line 3: ") and "line 2" in message


def test_adjacent_rows_and_other_requests_or_resources_are_not_overlaps(demo_org) -> None:
    text = (
        HEADER
        + row("01T00:00:00", "02T00:00:00")
        + row("02T00:00:00", "03T00:00:00")  # starts when the first ends
        + row("01T00:00:00", "02T00:00:00", request="old-2")
        + row("01T00:00:00", "02T00:00:00", team="nlp")
    )
    assert usage_import(csv_text=text) == 4


def test_a_row_overlapping_an_earlier_import_is_refused_naming_its_line_and_file(demo_org) -> None:
    usage_import(csv_text=HEADER + row("01T00:00:00", "03T00:00:00"), source_name="september.csv")
    (message,) = refused(HEADER + row("10T00:00:00", "11T00:00:00") + row("02T00:00:00", "05T00:00:00"))
    assert message.startswith("line 3: ") and "line 2 of september.csv" in message
    assert ImportedUsage.objects.count() == 1
