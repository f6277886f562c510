"""Imported usage is checked against the catalog's MIG geometry and billed by its GPU share."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal as D

import pytest
from django.core.exceptions import ValidationError

from billing.costs.chargeback import month_chargeback
from billing.costs.services import usage_import
from billing.models import ImportedUsage

pytestmark = pytest.mark.django_db
HEADER = "team,request,gpu_model,strategy,resource_name,quantity,time_slice_replicas,start,end,avg_utilization_pct\n"


def row(resource: str, model: str = "H100-80GB", name: str = "old-1") -> str:
    return f"vision,{name},{model},mig,{resource},1,,2026-10-01T00:00:00Z,2026-10-01T10:00:00Z,\n"


@pytest.mark.parametrize(
    ("model", "resource"),
    [
        ("H100-80GB", "nvidia.com/mig-3g.99gb"),  # 3 compute slices, but no such profile on H100
        ("H100-80GB", "nvidia.com/mig-1g.5gb"),  # an A100-40GB profile, not an H100 one
        ("A30", "nvidia.com/mig-3g.18gb"),
    ],
)
def test_reproduction_8_import_refuses_mig_profiles_the_model_does_not_have(demo_org, model, resource) -> None:
    with pytest.raises(ValidationError) as info:
        usage_import(csv_text=HEADER + row(resource, model))
    [message] = info.value.message_dict["rows"]
    assert message.startswith("line 2: resource_name:") and resource.removeprefix("nvidia.com/mig-") in message
    assert "Its profiles:" in message
    assert ImportedUsage.objects.count() == 0


def test_imported_mig_usage_bills_its_weight(demo_org) -> None:
    # 1g.20gb on an H100: 1 of 7 compute slices but 2 of 8 memory slices, so 10 h bill 2.5 GPU-hours, not 10/7.
    usage_import(csv_text=HEADER + row("nvidia.com/mig-1g.20gb"))
    chargeback = month_chargeback(month=date(2026, 10, 1), now=datetime(2026, 11, 2, tzinfo=UTC))
    [line] = chargeback.teams["vision"].lines
    assert line.unit_share == D("0.25")
    assert line.allocated_gpu_hours == D("2.5")
