"""The branded 403 and 404 pages with DEBUG off: the reason the code raised, and a way back."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _debug_off(settings) -> None:
    settings.DEBUG = False


def test_a_403_says_the_reason_the_view_raised_and_links_back(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.member)

    response = client.get(reverse("allocations:approvals"))

    assert response.status_code == 403
    assert "403.html" in [template.name for template in response.templates]
    body = response.content.decode()
    assert "Only platform approvers can see the approval queue." in body
    assert f'href="{reverse("home")}"' in body
    assert "Back to the overview" in body
    assert '<nav class="mainnav"' in body  # the site's own header: the user is not stranded


def test_a_404_is_branded_and_says_nothing_about_other_teams_objects(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.member)

    response = client.get("/requests/987654/")

    assert response.status_code == 404
    body = response.content.decode()
    assert "Nothing here" in body
    assert "/requests/987654/" in body
    assert "Back to the overview" in body
    assert "GpuRequest" not in body  # no model names or query text from get_object_or_404


def test_an_anonymous_404_still_renders(client) -> None:
    response = client.get("/no-such-page/")

    assert response.status_code == 404
    assert "Nothing here" in response.content.decode()
    assert "Your requests" not in response.content.decode()


def test_another_teams_request_gets_the_same_404_as_a_missing_one(client, demo_org: DemoOrg) -> None:
    theirs = GpuRequestFactory(team=demo_org.other_team, name="nlp-secret-run")
    client.force_login(demo_org.member)

    response = client.get(reverse("allocations:request-detail", args=[theirs.pk]))

    assert response.status_code == 404
    assert "Nothing here" in response.content.decode()
    assert "nlp-secret-run" not in response.content.decode()
