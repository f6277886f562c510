"""The new-request page's live preview: the server renders the recommendation with the request page's own template."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse

from allocations.clusters.placement import place
from gpucore.decision import WorkloadProfile
from tests.factories import DemoOrg, TeamBudgetFactory, UserFactory

pytestmark = pytest.mark.django_db

URL = "/requests/preview/"
PROFILE = {
    "team": "vision",
    "workload_type": "training",
    "gpu_memory_gb": "40",
    "gpu_count": "1",
    "replicas": "1",
    "duration_hours": "48",
}


def client_for(user, **kwargs) -> Client:
    client = Client(**kwargs)
    client.force_login(user)
    return client


def test_the_preview_is_the_spec_fragment_a_request_page_shows(demo_org: DemoOrg) -> None:
    response = client_for(demo_org.member).post(URL, PROFILE)

    assert response.status_code == 200
    assert response.templates[0].name == "allocations/_spec.html"
    html = response.content.decode()
    spec = place(WorkloadProfile.from_mapping({"workload_type": "training", "gpu_memory_gb": 40, "duration_hours": 48}))
    assert html == render_to_string("allocations/_spec.html", {"spec": spec.spec, "budget_team": demo_org.team})
    assert 'class="rec-resource">nvidia.com/gpu<' in html and "Cost for 48 h" in html
    assert f'data-strategy="{spec.spec["strategy"]}"' in html and 'data-gpu-model="H100-80GB"' in html


def test_field_errors_come_back_as_a_400_fragment_naming_each_field(demo_org: DemoOrg) -> None:
    client = client_for(demo_org.member)

    missing = client.post(URL, {**PROFILE, "gpu_memory_gb": ""})
    unoffered = client.post(URL, {**PROFILE, "gpu_model": "A30"})  # in the catalog, in no pool

    label = '<li data-field="gpu_memory_gb"><strong>Peak GPU memory per replica (GiB): </strong>'
    assert missing.status_code == 400 and label in missing.content.decode()
    assert unoffered.status_code == 400 and 'data-field="gpu_model"' in unoffered.content.decode()


def test_the_preview_is_scoped_to_the_users_teams(demo_org: DemoOrg) -> None:
    other_team = client_for(demo_org.member).post(URL, {**PROFILE, "team": "nlp"})
    no_team = client_for(UserFactory(username="loner")).post(URL, PROFILE)

    assert other_team.status_code == 400 and 'data-field="team"' in other_team.content.decode()
    assert no_team.status_code == 400 and 'data-field="team"' in no_team.content.decode()


def test_the_preview_needs_a_signed_in_post_with_the_csrf_token(demo_org: DemoOrg) -> None:
    assert Client().post(URL, PROFILE).status_code == 302  # to the sign-in page
    assert client_for(demo_org.member).get(URL).status_code == 405
    strict = client_for(demo_org.member, enforce_csrf_checks=True)
    assert strict.post(URL, PROFILE).status_code == 403
    strict.get(reverse("allocations:request-new"))
    token = strict.cookies["csrftoken"].value
    assert strict.post(URL, PROFILE, HTTP_X_CSRFTOKEN=token).status_code == 200


def test_the_page_carries_no_copy_of_the_template_in_javascript() -> None:
    script = Path(finders.find("js/request_form.js")).read_text(encoding="utf-8")
    # It may read the server's markup (the sticky summary reads .rec-head's text), never write its own.
    for markup in ('class="rec-head', "alternatives", "rationale", "Saving vs dedicated", 'createElement("table'):
        assert markup not in script


def test_the_preview_shows_the_teams_money_budget_with_this_request_in_it(demo_org: DemoOrg, time_machine) -> None:
    time_machine.move_to(datetime(2026, 11, 10, 12, tzinfo=UTC))  # all 48 hours in this month
    TeamBudgetFactory(team=demo_org.team, monthly_amount=Decimal("100.00"))

    html = client_for(demo_org.member).post(URL, PROFILE).content.decode()

    budget = html.partition('id="budget-preview"')[2]
    assert "<h3>Vision's budget this month</h3>" in budget
    assert "0.00 USD</strong> of a 100.00 USD budget" in budget
    # 48 hours of one dedicated H100 at the catalog's 6.88 an hour (README "How cost is computed"): 330.24.
    assert "adds about <strong>330.24 USD</strong> this month" in budget
    assert '<strong class="no">330.24 USD</strong> of 100.00 USD' in budget  # it would take the month over budget
