"""GET/POST /api/v1/templates/ and ``template`` on POST /api/v1/requests/: scoping (another team's template is 404),
who manages templates (platform admins, a team's leads), the audit of each change, and a request made from one."""

from __future__ import annotations

import pytest

from allocations.models import GpuRequest, RequestTemplate
from audit.models import AuditEvent
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db

URL = "/api/v1/templates/"
FINETUNE = {"workload_type": "training", "gpu_memory_gb": 40, "duration_hours": 24, "sla_tier": "tier2_batch"}


@pytest.fixture
def templates(demo_org):
    """One template for every team, one of vision's and one of nlp's."""
    return {
        "everyone": RequestTemplate.objects.create(name="Fine-tune, one GPU", profile=FINETUNE),
        "vision": RequestTemplate.objects.create(
            name="Vision fine-tune",
            team=demo_org.team,
            profile={**FINETUNE, "gpu_memory_gb": 30},
            image="nvcr.io/nvidia/pytorch:24.05-py3",
            command=["python", "finetune.py"],
            purpose="Weekly fine-tune",
        ),
        "nlp": RequestTemplate.objects.create(name="NLP eval", team=demo_org.other_team, profile=FINETUNE),
    }


def names(response) -> set[str]:
    body = response.json()
    return {row["name"] for row in (body["results"] if isinstance(body, dict) else body)}


def test_a_member_lists_the_organisation_and_own_team_templates(client_as, templates) -> None:
    response = client_as("member").get(URL)

    assert response.status_code == 200
    assert names(response) == {"Fine-tune, one GPU", "Vision fine-tune"}


def test_another_teams_template_is_404(client_as, templates) -> None:
    client = client_as("member")

    assert client.get(f"{URL}{templates['nlp'].pk}/").status_code == 404
    assert client.patch(f"{URL}{templates['nlp'].pk}/", {"name": "mine"}, format="json").status_code == 404
    assert client.delete(f"{URL}{templates['nlp'].pk}/").status_code == 404
    assert client.get(f"{URL}{templates['vision'].pk}/").json()["team"] == "vision"


def test_the_list_narrows_to_what_one_team_is_offered(client_as, templates) -> None:
    approver = client_as("approver")

    assert names(approver.get(URL)) == {"Fine-tune, one GPU", "Vision fine-tune", "NLP eval"}
    assert names(approver.get(URL, {"team": "nlp"})) == {"Fine-tune, one GPU", "NLP eval"}
    assert client_as("member").get(URL, {"team": "nlp"}).status_code == 404


def test_a_lead_creates_a_team_template_and_it_is_audited(client_as, demo_org) -> None:
    body = {"name": "Notebook", "team": "vision", "profile": {"workload_type": "development", "gpu_memory_gb": 4}}

    response = client_as("team_lead").post(URL, body, format="json")

    assert response.status_code == 201, response.json()
    template = RequestTemplate.objects.get(pk=response.json()["id"])
    assert template.team == demo_org.team and template.created_by == demo_org.team_lead
    event = AuditEvent.objects.get(object_type="allocations.requesttemplate", object_id=str(template.pk))
    assert event.actor == demo_org.team_lead and event.action == "create"


@pytest.mark.parametrize(
    ("role", "team", "expected"),
    [
        ("member", "vision", 403),  # members use templates; leads manage them
        ("team_lead", None, 403),  # organisation-wide ones are the platform admins'
        ("team_lead", "nlp", 422),  # not a team the lead may see: "does not exist"
        ("platform_admin", None, 201),
        ("platform_admin", "nlp", 201),
    ],
)
def test_who_manages_templates(client_as, demo_org, role, team, expected) -> None:
    body = {"name": "Preset", "team": team, "profile": {"workload_type": "training", "gpu_memory_gb": 8}}

    response = client_as(role).post(URL, body, format="json")

    assert response.status_code == expected, response.json()
    assert RequestTemplate.objects.filter(name="Preset").exists() == (expected == 201)


def test_a_template_with_a_bad_profile_is_refused_naming_the_field(client_as) -> None:
    body = {"name": "Broken", "team": "vision", "profile": {"workload_type": "training", "gpu_memory_gb": -3}}

    response = client_as("team_lead").post(URL, body, format="json")

    assert response.status_code == 400
    assert "gpu_memory_gb" in " ".join(response.json()["profile"])
    assert not RequestTemplate.objects.filter(name="Broken").exists()


def test_a_name_is_unique_within_its_scope(client_as, templates) -> None:
    body = {"name": "Vision fine-tune", "team": "vision", "profile": FINETUNE}

    response = client_as("team_lead").post(URL, body, format="json")

    assert response.status_code == 400
    assert RequestTemplate.objects.filter(name="Vision fine-tune").count() == 1


def test_a_lead_changes_and_deletes_the_teams_template_but_not_the_organisations(client_as, templates) -> None:
    lead = client_as("team_lead")

    changed = lead.patch(f"{URL}{templates['vision'].pk}/", {"description": "Now with notes"}, format="json")
    refused = lead.delete(f"{URL}{templates['everyone'].pk}/")
    deleted = lead.delete(f"{URL}{templates['vision'].pk}/")

    assert changed.status_code == 200 and changed.json()["description"] == "Now with notes"
    assert refused.status_code == 403
    assert deleted.status_code == 204
    assert set(RequestTemplate.objects.values_list("name", flat=True)) == {"Fine-tune, one GPU", "NLP eval"}
    actions = AuditEvent.objects.filter(object_type="allocations.requesttemplate").values_list("action", flat=True)
    assert sorted(actions) == ["delete", "update"]


def test_a_request_submitted_from_a_template_takes_its_values(client_as, templates) -> None:
    body = {"team": "vision", "name": "weekly", "template": templates["vision"].pk, "duration_hours": 12}

    response = client_as("member").post("/api/v1/requests/", body, format="json")

    assert response.status_code == 201, response.json()
    request = GpuRequest.objects.get(pk=response.json()["id"])
    assert request.gpu_memory_gb == 30 and request.workload_type == "training"
    assert request.duration_hours == 12  # the body's value wins over the template's 24
    assert request.image == "nvcr.io/nvidia/pytorch:24.05-py3" and request.command == ["python", "finetune.py"]
    assert request.purpose == "Weekly fine-tune" and request.sla_tier.slug == "tier2_batch"


def test_a_request_cannot_use_another_teams_template(client_as, templates) -> None:
    client = client_as("member")

    hidden = client.post(
        "/api/v1/requests/", {"team": "vision", "name": "x", "template": templates["nlp"].pk}, format="json"
    )
    unknown = client.post("/api/v1/requests/", {"team": "vision", "name": "x", "template": 99999}, format="json")

    # Well-formed ids naming no template offered to the caller: unknown objects (422), alike whether one exists.
    assert hidden.status_code == 422 and "template" in hidden.json()
    assert unknown.status_code == 422 and "template" in unknown.json()
    assert hidden.json()["template"][0].replace(str(templates["nlp"].pk), "N") == unknown.json()["template"][0].replace(
        "99999", "N"
    )
    assert not GpuRequest.objects.exists()


def test_a_teams_template_is_for_that_team_only(client_as, demo_org, templates) -> None:
    MembershipFactory(user=demo_org.member, team=demo_org.other_team)
    body = {"team": "nlp", "name": "x", "template": templates["vision"].pk}

    response = client_as("member").post("/api/v1/requests/", body, format="json")

    assert response.status_code == 400
    assert "team vision" in response.json()["template"][0]
