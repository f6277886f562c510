"""Forms that neither double work nor confuse: a second open request of the same name in the team is refused on
``name`` until confirmed (Back then Submit), a bad number says it once, memory is per replica and the preview checks
what was meant, and a dashboard range too long answers next to its controls."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from allocations.models import GpuRequest, RequestStatus
from tests.allocations.test_form_resubmission import _form_page, _post
from tests.factories import GpuRequestFactory

pytestmark = pytest.mark.django_db


def test_back_and_resubmit_is_refused_on_the_name_until_confirmed(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.member)
    assert _post(client, _form_page(client), name="resnet").status_code == 302
    (first,) = GpuRequest.objects.all()

    again = _post(client, _form_page(client), name="ResNet")  # a new page: the one-time token does not catch it

    body = again.content.decode()
    assert again.status_code == 400 and GpuRequest.objects.count() == 1
    assert f"already has an open request named “resnet” (#{first.pk}, pending approval)" in body
    assert 'name="submit_duplicate"' in body  # the way to say "yes, another one"
    confirmed = _post(client, {**_form_page(client), "submit_duplicate": "on"}, name="resnet")
    assert confirmed.status_code == 302 and GpuRequest.objects.count() == 2


def test_an_ended_request_of_the_same_name_does_not_stop_a_new_one(demo_org) -> None:
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="resnet", status=RequestStatus.RELEASED)
    client = Client()
    client.force_login(demo_org.member)

    assert _post(client, _form_page(client), name="resnet").status_code == 302


def test_another_teams_request_of_the_same_name_does_not_count(demo_org) -> None:
    GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider, name="resnet")
    client = Client()
    client.force_login(demo_org.member)

    assert _post(client, _form_page(client), name="resnet").status_code == 302


def test_the_api_keeps_submitting_same_named_requests(demo_org, api_client) -> None:
    api_client.force_authenticate(demo_org.member)
    body = {"team": "vision", "name": "sweep", "workload_type": "training", "gpu_memory_gb": 40, "command": ["sweep"]}
    assert api_client.post("/api/v1/requests/", body, format="json").status_code == 201
    assert api_client.post("/api/v1/requests/", body, format="json").status_code == 201


def test_extension_hours_too_many_says_so_once(demo_org) -> None:
    gpu_request = GpuRequestFactory(
        team=demo_org.team, requester=demo_org.member, status=RequestStatus.ACTIVE, duration_hours=Decimal(8)
    )
    client = Client()
    client.force_login(demo_org.member)

    page = client.post(
        reverse("allocations:request-extend", args=[gpu_request.pk]), {"hours": "1000", "reason": "x"}, follow=True
    )

    texts = [str(message) for message in page.context["messages"]]
    assert texts == ["Hours to add: Ensure this value is less than or equal to 720."]


def test_memory_is_asked_per_replica(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.member)

    page = client.get(reverse("allocations:request-new")).content.decode()

    assert "Peak GPU memory per replica (GiB)" in page
    assert "8 GPUs of 70 GiB each is 560 GiB" in page
    assert "fitted with 15 % headroom against the memory a GPU or slice really offers" in page


@pytest.mark.parametrize(("memory", "noted"), [("64", True), ("512", False)])
def test_the_preview_checks_memory_typed_per_gpu(demo_org, memory: str, noted: bool) -> None:
    client = Client()
    client.force_login(demo_org.member)
    profile = {"team": "vision", "name": "big", "workload_type": "training", "gpu_memory_gb": memory,
               "gpu_count": "8", "replicas": "1"}  # fmt: skip

    preview = client.post(reverse("allocations:request-preview"), profile)

    body = preview.content.decode()
    assert preview.status_code == 200
    assert ('id="memory-per-replica-note"' in body) is noted
    if noted:
        assert "64 GiB is the whole replica&#x27;s peak: 8 GiB on each of its 8 GPUs" in body
        assert "enter 512 GiB" in body


def test_a_custom_range_too_long_answers_next_to_the_controls(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.team_lead)

    response = client.get(reverse("billing:dashboard"), {"period": "custom", "from": "2020-01", "to": "2026-11"})

    body = response.content.decode()
    assert response.status_code == 400
    controls = body.partition('id="dashboard-controls"')[2].partition("</form>")[0]
    assert 'id="dashboard-query-error"' in controls
    assert re.search(r"A custom range covers at most 24 months, not 83", controls)
    assert 'name="to" id="id_to" value="2026-11" aria-invalid="true"' in controls
    assert 'id="chart-cost-over-time"' in body or 'data-empty="cost-over-time"' in body  # the page, not an error page
