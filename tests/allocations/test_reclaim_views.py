"""The request page's idle reclaim buttons: Resume on a suspended request, Keep running on an active notebook; only
for those the services allow, and each posts through its service."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from allocations.models import GpuRequest, RequestStatus, SlaTier
from tests.factories import GpuRequestFactory

pytestmark = pytest.mark.django_db


def notebook(org, status: str, workload_type: str = "development") -> GpuRequest:
    return GpuRequestFactory(
        team=org.team,
        requester=org.member,
        workload_type=workload_type,
        sla_tier=SlaTier.objects.get(slug="tier3_development"),
        status=status,
        cluster=org.cluster,
        node_pool=org.pool,
    )


def page(client: Client, request: GpuRequest) -> str:
    return client.get(reverse("allocations:request-detail", args=[request.pk])).content.decode()


def test_resume_button_brings_a_suspended_notebook_back(demo_org) -> None:
    request = notebook(demo_org, RequestStatus.SUSPENDED)
    GpuRequest.objects.filter(pk=request.pk).update(suspended_at=timezone.now())
    client = Client()
    client.force_login(demo_org.member)
    html = page(client, request)
    assert reverse("allocations:request-resume", args=[request.pk]) in html and "Suspended for idling" in html

    client.post(reverse("allocations:request-resume", args=[request.pk]))

    request.refresh_from_db()
    assert request.status == RequestStatus.PROVISIONING


def test_keep_button_on_a_running_notebook_only(demo_org) -> None:
    running = notebook(demo_org, RequestStatus.ACTIVE)
    training = notebook(demo_org, RequestStatus.ACTIVE, workload_type="training")
    client = Client()
    client.force_login(demo_org.team_lead)
    assert reverse("allocations:request-keep", args=[running.pk]) in page(client, running)
    assert "request-keep" not in page(client, training) and "/keep/" not in page(client, training)
    assert "/resume/" not in page(client, running)

    client.post(reverse("allocations:request-keep", args=[running.pk]))

    running.refresh_from_db()
    assert running.idle_kept_at is not None
    assert reverse("allocations:request-keep", args=[running.pk]) not in page(client, running)  # once per window


def test_no_buttons_for_someone_of_another_team(demo_org) -> None:
    request = notebook(demo_org, RequestStatus.SUSPENDED)
    client = Client()
    client.force_login(demo_org.outsider)
    assert client.post(reverse("allocations:request-resume", args=[request.pk])).status_code == 404
    request.refresh_from_db()
    assert request.status == RequestStatus.SUSPENDED
