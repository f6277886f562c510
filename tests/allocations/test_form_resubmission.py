"""One request form submits once: the page carries a one-time submission token, so a double click, a reload after
POST or a replayed form (one CSRF token reused created 3 requests) lands on the request already made."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from allocations.models import GpuRequest

pytestmark = pytest.mark.django_db


def _form_page(client: Client) -> dict[str, str]:
    page = client.get(reverse("allocations:request-new")).content.decode()
    fields = dict(re.findall(r'name="(csrfmiddlewaretoken|submission_token)" value="([^"]+)"', page))
    assert set(fields) == {"csrfmiddlewaretoken", "submission_token"}, "the form carries both tokens"
    return fields


def _post(client: Client, tokens: dict[str, str], name: str = "once") -> object:
    body = {
        **tokens,
        "team": "vision",
        "name": name,
        "workload_type": "training",
        "gpu_memory_gb": "40",
        "gpu_count": "1",
        "replicas": "1",
        "command": "python main.py",
    }
    return client.post(reverse("allocations:request-new"), body)


def test_the_same_form_posted_three_times_creates_one_request(demo_org) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(demo_org.member)
    tokens = _form_page(client)
    answers = [_post(client, tokens) for _ in range(3)]
    (created,) = GpuRequest.objects.all()
    detail = reverse("allocations:request-detail", kwargs={"pk": created.pk})
    print(f"\n3 posts of one form: {GpuRequest.objects.count()} request(s), answers {[a.status_code for a in answers]}")
    assert [a.status_code for a in answers] == [302, 302, 302]
    assert {a["Location"] for a in answers} == {detail}
    page = client.get(detail)
    assert any("already submitted" in str(m) for m in page.context["messages"])


def test_a_fresh_form_submits_again_and_a_refused_one_can_be_corrected(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.member)
    tokens = _form_page(client)
    refused = _post(client, tokens, name="two\nlines")
    assert refused.status_code == 400 and GpuRequest.objects.count() == 0
    assert _post(client, tokens, name="fixed").status_code == 302  # the refused post did not use the token up
    assert _post(client, _form_page(client), name="second").status_code == 302
    assert sorted(GpuRequest.objects.values_list("name", flat=True)) == ["fixed", "second"]
