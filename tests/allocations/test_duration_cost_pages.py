"""A 48-hour request shows its 48-hour cost and its effect on the budget.

Through the real services, pages and e-mails: the demo pool is H100-80GB at the catalog list price of 6.88/h, so a
48-hour dedicated GPU costs 330.24 USD (a month, 730 h, 5022.40 USD); the team's budget is 100 GPU-hours.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from allocations.requests.services import gpu_request_submit
from tests.factories import DemoOrg, TeamBudgetFactory

pytestmark = pytest.mark.django_db

FORTY_EIGHT_HOURS = {"workload_type": "training", "gpu_memory_gb": 60, "duration_hours": 48}


@pytest.fixture(autouse=True)
def _mid_month(time_machine) -> None:
    """The budget lines count this month's hours: 48 of them fit in the month only away from its last two days."""
    time_machine.move_to(datetime(2026, 11, 10, 12, tzinfo=UTC))


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def budgeted(demo_org: DemoOrg) -> DemoOrg:
    demo_org.team.monthly_gpu_hour_budget = Decimal(100)
    demo_org.team.save()
    return demo_org


def test_the_request_page_and_queue_show_the_48_hour_cost_and_the_budget(budgeted, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        request = gpu_request_submit(
            command=["python", "main.py"],
            acting_user=budgeted.member,
            team=budgeted.team,
            name="train",
            profile_data=FORTY_EIGHT_HOURS,
        )
    assert request.spec["estimated_cost"] == {"amount": "330.24", "currency": "USD", "hours": 48}

    detail = client_for(budgeted.member).get(reverse("allocations:request-detail", args=[request.pk])).content.decode()
    assert "Cost for 48 h" in detail and "330.24 USD" in detail
    assert "5,022.40 USD" in detail  # the monthly rate beside it
    assert "catalog list price, AWS us-east-1 on-demand per GPU" in detail  # the price basis is named
    assert "<dt>Overhead</dt><dd>none</dd>" in detail  # a dedicated GPU's overhead, never "0-0 %"

    queue = client_for(budgeted.approver).get(reverse("allocations:approvals")).content.decode()
    assert "330.24 USD" in queue and "for 48 h" in queue
    assert "This request this month: 48.0 GPU-h · 330.24 USD" in queue
    assert "Budget left after it: <strong>52.0</strong> of 100.0 GPU-h" in queue
    assert "Team this month: 0.0 GPU-h · 0.00 USD" in queue  # one voice: GPU-hours to one decimal
    # With a money budget, the approver also sees where the request takes the team's spend this month.
    TeamBudgetFactory(team=budgeted.team, monthly_amount=Decimal("300.00"))
    queue = client_for(budgeted.approver).get(reverse("allocations:approvals")).content.decode()
    assert 'Money budget: 0.00 USD of 300.00 USD; <span class="no">330.24 USD with it</span>' in queue

    (message,) = [m for m in mail.outbox if "waiting for approval" in m.body]
    assert "Estimated cost for the 48 hours asked for: 330.24 USD" in message.body
    assert "Monthly rate: 5,022.40 USD per month" in message.body


def test_a_request_with_only_an_expiry_is_priced_until_it(budgeted):
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=budgeted.member,
        team=budgeted.team,
        name="until",
        profile_data={"workload_type": "training", "gpu_memory_gb": 60},
        expires_at=timezone.now() + timedelta(hours=24, seconds=30),
    )
    assert request.duration_hours is None
    assert request.spec["estimated_cost"]["hours"] == 24.01
    assert request.spec["estimated_cost"]["amount"] == "165.19"  # 6.88 x 24.01 = 165.1888


def test_over_budget_is_said_in_the_queue(budgeted):
    gpu_request_submit(
        command=["python", "main.py"],
        acting_user=budgeted.member,
        team=budgeted.team,
        name="long",
        profile_data={**FORTY_EIGHT_HOURS, "gpu_count": 4},  # 4 x 48 = 192 GPU-hours against 100
    )
    queue = client_for(budgeted.approver).get(reverse("allocations:approvals")).content.decode()
    assert "Over budget by 92.0 GPU-h" in queue


def test_the_form_preview_refuses_more_gpus_per_replica_than_a_node_has(budgeted):
    # The demo pool's nodes have 8 H100s: the preview names gpu_count before anything is submitted.
    client = client_for(budgeted.member)
    body = {"team": "vision", "workload_type": "training", "gpu_memory_gb": "640", "gpu_count": "16", "replicas": "1"}
    response = client.post("/requests/preview/", body)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'data-field="gpu_count"' in html and "at most 8 GPUs" in html
