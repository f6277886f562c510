"""Browser pages of allocations: each page for each role, form errors, actions through the services, bulk review."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from allocations.models import GpuRequest, Quota, RequestStatus
from allocations.requests.services import gpu_request_submit
from allocations.teams.pages import ALLOCATIONS_PER_PAGE
from infra.pagination import COUNT_LIMIT
from tests.factories import DemoOrg, GpuRequestFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

TRAINING = {
    "workload_type": "training",
    "gpu_memory_gb": "40",
    "gpu_count": "1",
    "replicas": "1",
    "command": "python main.py",
}


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form_data(**overrides: str) -> dict[str, str]:
    return {"team": "vision", "name": "resnet-train", "purpose": "Retrain", **TRAINING, **overrides}


def submit(org: DemoOrg, user=None, **profile) -> GpuRequest:
    data = {"workload_type": "training", "gpu_memory_gb": 40, **profile}
    return gpu_request_submit(
        command=["python", "main.py"], acting_user=user or org.member, team=org.team, name="job", profile_data=data
    )


def messages_of(response) -> list[str]:
    return [str(m) for m in response.context["messages"]] if response.context else []


# --- Anonymous users and the nav ----------------------------------------------------------------------------------

PAGES = [
    ("allocations:request-new", {}),
    ("allocations:request-list", {}),
    ("allocations:approvals", {}),
    ("allocations:team-detail", {"slug": "vision"}),
    ("tokens:list", {}),
]


@pytest.mark.parametrize(("name", "kwargs"), PAGES)
def test_pages_need_sign_in(client: Client, demo_org: DemoOrg, name: str, kwargs: dict) -> None:
    response = client.get(reverse(name, kwargs=kwargs))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(("role", "sees_approvals"), [("member", False), ("approver", True), ("platform_admin", True)])
def test_nav_links(demo_org: DemoOrg, role: str, sees_approvals: bool) -> None:
    html = client_for(demo_org.user(role)).get(reverse("home")).content.decode()
    for url in ("/requests/new/", "/requests/", "/account/tokens/"):
        assert f'href="{url}"' in html
    assert ('href="/approvals/"' in html) is sees_approvals


# --- New request --------------------------------------------------------------------------------------------------


def test_new_request_form_offers_only_the_users_teams_and_carries_csrf(demo_org: DemoOrg) -> None:
    response = client_for(demo_org.member).get(reverse("allocations:request-new"))
    assert response.status_code == 200
    html = response.content.decode()
    assert "csrfmiddlewaretoken" in html
    assert list(response.context["form"].fields["team"].queryset) == [demo_org.team]
    assert 'data-preview-url="/requests/preview/"' in html
    assert "js/request_form.js" in html


def test_new_request_without_a_team_shows_the_empty_state(demo_org: DemoOrg) -> None:
    response = client_for(UserFactory(username="loner")).get(reverse("allocations:request-new"))
    assert response.status_code == 200
    assert "You are not in a team yet" in response.content.decode()


def test_submit_creates_a_pending_request_and_redirects_to_it(demo_org: DemoOrg) -> None:
    client = client_for(demo_org.member)
    response = client.post(reverse("allocations:request-new"), form_data(command="python train.py --epochs 3"))
    gpu_request = GpuRequest.objects.get(name="resnet-train")
    assert response.status_code == 302
    assert response["Location"] == reverse("allocations:request-detail", kwargs={"pk": gpu_request.pk})
    assert gpu_request.status == RequestStatus.PENDING_APPROVAL
    assert gpu_request.requester == demo_org.member
    assert gpu_request.command == ["python", "train.py", "--epochs", "3"]
    assert gpu_request.resource_name == "nvidia.com/gpu"
    page = client.get(response["Location"])
    assert any("was submitted" in m for m in messages_of(page))


def test_submit_with_an_expiry_date(demo_org: DemoOrg) -> None:
    day = timezone.localdate() + timedelta(days=3)
    response = client_for(demo_org.member).post(reverse("allocations:request-new"), form_data(expires_on=str(day)))
    assert response.status_code == 302
    expires_at = timezone.localtime(GpuRequest.objects.get(name="resnet-train").expires_at)
    assert (expires_at.date(), expires_at.hour) == (day + timedelta(days=1), 0)


@pytest.mark.parametrize(
    ("overrides", "field", "words"),
    [
        ({"name": ""}, "name", "required"),
        ({"gpu_memory_gb": ""}, "gpu_memory_gb", "required"),
        ({"gpu_memory_gb": "-1"}, "gpu_memory_gb", "greater than"),
        ({"team": "nlp"}, "team", "valid choice"),
        ({"expected_utilization_pct": "150"}, "expected_utilization_pct", "less than"),
        ({"duration_hours": "5", "expires_on": "2999-01-01"}, "expires_on", "not both"),
        ({"expires_on": "2000-01-01"}, "expires_on", "after today"),
        ({"command": "python 'unclosed"}, "command", "split"),
        # The service's own ValidationError lands on the field it names: no pool offers an A100 here.
        ({"gpu_model": "A100-40GB"}, "gpu_model", "No node pool offers"),
    ],
)
def test_submit_errors_are_shown_on_their_field(demo_org: DemoOrg, overrides: dict, field: str, words: str) -> None:
    response = client_for(demo_org.member).post(reverse("allocations:request-new"), form_data(**overrides))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert words in " ".join(errors[field])
    assert not GpuRequest.objects.exists()


def test_quota_errors_are_a_form_error_naming_quota_limit_use_and_ask(demo_org: DemoOrg) -> None:
    Quota.objects.filter(team=demo_org.team).update(limit=1)
    response = client_for(demo_org.member).post(reverse("allocations:request-new"), form_data(replicas="2"))
    assert response.status_code == 400
    message = " ".join(response.context["form"].non_field_errors())
    for word in ("Quota exceeded", "may hold 1", "0 in use", "2 asked"):
        assert word in message
    assert "Quota exceeded" in response.content.decode()


def test_no_quota_at_all_is_explained(demo_org: DemoOrg) -> None:
    Quota.objects.filter(team=demo_org.team).delete()
    response = client_for(demo_org.member).post(reverse("allocations:request-new"), form_data())
    assert "has no quota for nvidia.com/gpu" in " ".join(response.context["form"].non_field_errors())


# --- Request list -------------------------------------------------------------------------------------------------


def test_list_shows_the_users_teams_only(demo_org: DemoOrg) -> None:
    mine = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="vision-job")
    GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider, name="nlp-job")
    response = client_for(demo_org.member).get(reverse("allocations:request-list"))
    assert [r.pk for r in response.context["page"].object_list] == [mine.pk]
    assert "nlp-job" not in response.content.decode()


def test_list_for_approvers_shows_every_team(demo_org: DemoOrg) -> None:
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    GpuRequestFactory(team=demo_org.other_team, requester=demo_org.outsider)
    response = client_for(demo_org.approver).get(reverse("allocations:request-list"))
    assert response.context["page"].paginator.count == 2


def test_list_filters_searches_and_restricts_team_choices(demo_org: DemoOrg) -> None:
    # Purposes set: the factory's random sentence could hold the searched text ("alphabet", "between").
    GpuRequestFactory(
        team=demo_org.team, requester=demo_org.member, name="alpha", status=RequestStatus.ACTIVE, purpose="Train it."
    )
    GpuRequestFactory(team=demo_org.team, requester=demo_org.team_lead, name="beta", purpose="Serve it.")
    client = client_for(demo_org.member)
    by_status = client.get(reverse("allocations:request-list"), {"status": "active"})
    assert [r.name for r in by_status.context["page"].object_list] == ["alpha"]
    by_name = client.get(reverse("allocations:request-list"), {"q": "BET"})
    assert [r.name for r in by_name.context["page"].object_list] == ["beta"]
    mine = client.get(reverse("allocations:request-list"), {"mine": "1"})
    assert [r.name for r in mine.context["page"].object_list] == ["alpha"]
    other_team = client.get(reverse("allocations:request-list"), {"team": "nlp"})
    assert list(other_team.context["filter_errors"]) == ["team"]  # another team's slug is no choice of this user's
    assert other_team.context["page"].paginator.count == 0
    team_select = by_name.content.decode().split('<select name="team"', 1)[1].split("</select>", 1)[0]
    assert re.findall(r'<option value="([^"]*)"', team_select) == ["", demo_org.team.slug]  # "Any team", then theirs


def test_list_filters_by_date(demo_org: DemoOrg) -> None:
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="today")
    tomorrow = (timezone.localdate() + timedelta(days=1)).isoformat()
    client = client_for(demo_org.member)
    assert (
        client.get(reverse("allocations:request-list"), {"created_after": tomorrow}).context["page"].paginator.count
        == 0
    )
    assert (
        client.get(reverse("allocations:request-list"), {"created_before": tomorrow}).context["page"].paginator.count
        == 1
    )


def test_list_paginates_by_25_within_a_query_budget(demo_org: DemoOrg, django_assert_max_num_queries) -> None:
    GpuRequestFactory.create_batch(30, team=demo_org.team, requester=demo_org.member)
    client = client_for(demo_org.member)
    with django_assert_max_num_queries(12):
        first = client.get(reverse("allocations:request-list"), {"status": "pending_approval"})
    assert len(first.context["page"].object_list) == 25
    assert "status=pending_approval&amp;page=2" in first.content.decode()
    second = client.get(reverse("allocations:request-list"), {"page": 2})
    assert len(second.context["page"].object_list) == 5


def test_the_list_counts_up_to_the_bound_and_still_reaches_its_last_page(demo_org: DemoOrg) -> None:
    """The page's COUNT(*) stops at COUNT_LIMIT rows, so a large table costs what a small one does."""
    template = GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    # The row's own columns: not the id, nor what the database generates (the spec's text).
    copied = [f.attname for f in GpuRequest._meta.concrete_fields if f.attname != "id" and not f.generated]
    columns = {name: getattr(template, name) for name in copied}
    GpuRequest.objects.bulk_create([GpuRequest(**columns) for _ in range(COUNT_LIMIT + 1)])  # limit + 2 in all
    client = client_for(demo_org.member)
    last_page = COUNT_LIMIT // 25 + 1

    first = client.get(reverse("allocations:request-list")).content.decode()
    last = client.get(reverse("allocations:request-list"), {"page": last_page})
    past = client.get(reverse("allocations:request-list"), {"page": last_page + 5})

    assert "More than 1,000 requests · page 1<" in first and "Page 1<" in first and "page=2" in first
    assert f"{COUNT_LIMIT + 2} requests · page {last_page} of {last_page}" in last.content.decode()
    assert len(last.context["page"].object_list) == 2 and not last.context["page"].has_next()
    # A page past the end is the last one, as Django's get_page answers.
    assert past.context["page"].number == last_page


def test_list_empty_states(demo_org: DemoOrg) -> None:
    client = client_for(demo_org.member)
    assert "No requests yet" in client.get(reverse("allocations:request-list")).content.decode()
    assert "No request matches" in client.get(reverse("allocations:request-list"), {"q": "zzz"}).content.decode()


# --- Request detail and the user's actions ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status"),
    [("member", 200), ("team_lead", 200), ("approver", 200), ("platform_admin", 200), ("outsider", 404)],
)
def test_detail_by_role(demo_org: DemoOrg, role: str, status: int) -> None:
    gpu_request = submit(demo_org)
    response = client_for(demo_org.user(role)).get(reverse("allocations:request-detail", kwargs={"pk": gpu_request.pk}))
    assert response.status_code == status


def test_detail_shows_spec_rationale_alternatives_and_timeline(demo_org: DemoOrg) -> None:
    gpu_request = submit(demo_org, workload_type="development", gpu_memory_gb=3, sla_tier="tier3_development")
    html = client_for(demo_org.member).get(gpu_request_url(gpu_request)).content.decode()
    spec = gpu_request.spec
    assert spec["resource_name"] in html
    assert spec["rationale"][0].split(":")[0][:30] in html.replace("&#x27;", "'").replace("&quot;", '"')
    assert "Pending approval" in html and "Submitted" in html
    assert ("Alternatives" in html) is bool(spec["alternatives"])
    assert f'action="/requests/{gpu_request.pk}/cancel/"' in html


def gpu_request_url(gpu_request: GpuRequest, action: str = "") -> str:
    url = reverse("allocations:request-detail", kwargs={"pk": gpu_request.pk})
    return f"{url}{action}/" if action else url


def test_cancel_by_the_requester(demo_org: DemoOrg) -> None:
    gpu_request = submit(demo_org)
    client = client_for(demo_org.member)
    response = client.post(gpu_request_url(gpu_request, "cancel"), {"comment": "Not needed"}, follow=True)
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.RELEASED
    assert gpu_request.events.last().comment == "Not needed"
    assert any("cancelled" in m for m in messages_of(response))


def test_cancel_needs_post(demo_org: DemoOrg) -> None:
    gpu_request = submit(demo_org)
    assert client_for(demo_org.member).get(gpu_request_url(gpu_request, "cancel")).status_code == 405


def test_cancel_by_another_member_is_forbidden_and_outsiders_get_404(demo_org: DemoOrg) -> None:
    gpu_request = submit(demo_org)
    colleague = MembershipFactory(team=demo_org.team).user
    page = client_for(colleague).get(gpu_request_url(gpu_request)).content.decode()
    assert "Cancel request" not in page
    assert client_for(colleague).post(gpu_request_url(gpu_request, "cancel")).status_code == 403
    assert client_for(demo_org.outsider).post(gpu_request_url(gpu_request, "cancel")).status_code == 404
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.PENDING_APPROVAL


def test_cancel_of_an_approved_request_shows_the_service_error(demo_org: DemoOrg) -> None:
    gpu_request = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, status=RequestStatus.APPROVED)
    response = client_for(demo_org.member).post(gpu_request_url(gpu_request, "cancel"), follow=True)
    assert any("Only a pending request can be cancelled" in m for m in messages_of(response))


def test_release_by_the_team_lead(demo_org: DemoOrg) -> None:
    gpu_request = GpuRequestFactory(team=demo_org.team, requester=demo_org.member, status=RequestStatus.ACTIVE)
    client = client_for(demo_org.team_lead)
    assert "Release GPUs" in client.get(gpu_request_url(gpu_request)).content.decode()
    client.post(gpu_request_url(gpu_request, "release"))
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.RELEASED


# --- Team page ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "status"),
    [("member", 200), ("team_lead", 200), ("approver", 200), ("platform_admin", 200), ("outsider", 404)],
)
def test_team_page_by_role(demo_org: DemoOrg, role: str, status: int) -> None:
    response = client_for(demo_org.user(role)).get(reverse("allocations:team-detail", kwargs={"slug": "vision"}))
    assert response.status_code == status


def test_team_page_shows_members_quota_use_and_active_allocations(demo_org: DemoOrg) -> None:
    demo_org.team.monthly_gpu_hour_budget = 1500
    demo_org.team.save()
    GpuRequestFactory(
        team=demo_org.team, requester=demo_org.member, name="live-one", status=RequestStatus.ACTIVE, resource_units=3
    )
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name="gone", status=RequestStatus.RELEASED)
    html = client_for(demo_org.member).get(reverse("allocations:team-detail", kwargs={"slug": "vision"})).content
    html = html.decode()
    assert "lead" in html and "Team lead" in html and "member" in html
    assert "3 / 8" in html
    assert "live-one" in html and "gone" not in html
    assert "<strong>1,500.0</strong> GPU-hour budget" in html


def test_team_page_pages_its_active_allocations(demo_org: DemoOrg) -> None:
    for n in range(ALLOCATIONS_PER_PAGE + 2):
        GpuRequestFactory(
            team=demo_org.team, requester=demo_org.member, name=f"held-{n:02d}", status=RequestStatus.ACTIVE
        )
    url = reverse("allocations:team-detail", kwargs={"slug": "vision"})
    first = client_for(demo_org.member).get(url).content.decode()
    second = client_for(demo_org.member).get(url, {"page": 2}).content.decode()
    shown_first = {f"held-{n:02d}" for n in range(ALLOCATIONS_PER_PAGE + 2) if f">held-{n:02d}<" in first}
    shown_second = {f"held-{n:02d}" for n in range(ALLOCATIONS_PER_PAGE + 2) if f">held-{n:02d}<" in second}
    assert len(shown_first) == ALLOCATIONS_PER_PAGE
    assert len(shown_second) == 2
    assert not shown_first & shown_second
    assert f"{ALLOCATIONS_PER_PAGE + 2} allocations, newest first" in first
    assert "page=2" in first


def test_unknown_team_is_404(demo_org: DemoOrg) -> None:
    response = client_for(demo_org.approver).get(reverse("allocations:team-detail", kwargs={"slug": "nope"}))
    assert response.status_code == 404


def test_csrf_is_enforced_on_forms(demo_org: DemoOrg) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(demo_org.member)
    assert client.post(reverse("allocations:request-new"), form_data()).status_code == 403
    assert client.post(reverse("tokens:list"), {"name": "n", "expires_in_days": 30}).status_code == 403
