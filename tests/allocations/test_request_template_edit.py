"""Templates are edited in the browser by those who manage them: a team's leads its templates, platform admins every
template (and those for every team); each change audited, bad values refused on the field they name."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from allocations.models import RequestTemplate
from audit.models import AuditEvent
from tests.factories import DemoOrg

pytestmark = pytest.mark.django_db

LIST = reverse("allocations:template-list")
NEW = reverse("allocations:template-new")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def vision_template(demo_org: DemoOrg) -> RequestTemplate:
    return RequestTemplate.objects.create(
        name="Vision fine-tune",
        team=demo_org.team,
        profile={"workload_type": "training", "gpu_memory_gb": 30, "sla_tier": "tier2_batch", "duration_hours": 24},
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        command=["python", "finetune.py", "--epochs", "10"],
    )


def form_values(**changes: object) -> dict[str, object]:
    values = {
        "name": "Vision fine-tune",
        "description": "",
        "team": "vision",
        "workload_type": "training",
        "gpu_memory_gb": "30",
        "gpu_count": "1",
        "replicas": "1",
        "sla_tier": "tier2_batch",
        "gpu_model": "",
        "duration_hours": "24",
        "latency_p99_ms": "",
        "expected_utilization_pct": "",
        "latency_sensitive": "",
        "image": "nvcr.io/nvidia/pytorch:24.05-py3",
        "command": "python finetune.py --epochs 10",
        "purpose": "",
    }
    return {**values, **changes}


def test_the_edit_form_shows_the_saved_values(demo_org: DemoOrg, vision_template: RequestTemplate) -> None:
    page = client_for(demo_org.team_lead).get(reverse("allocations:template-edit", args=[vision_template.pk]))

    assert page.status_code == 200
    html = page.content.decode()
    assert 'value="Vision fine-tune"' in html and 'value="python finetune.py --epochs 10"' in html
    assert 'value="tier2_batch" selected' in html
    # The profile leaves GPUs and replicas out: one of each, as the new-request form reads it.
    assert 'name="gpu_count" value="1"' in html and 'name="replicas" value="1"' in html
    assert ">Every team</option>" not in html  # leads offer a template to their team only


def test_a_lead_edits_the_teams_template_with_audit(demo_org: DemoOrg, vision_template: RequestTemplate) -> None:
    url = reverse("allocations:template-edit", args=[vision_template.pk])
    saved = client_for(demo_org.team_lead).post(
        url, form_values(gpu_memory_gb="60", gpu_count="2", command='python train.py --name "big run"')
    )

    assert saved.status_code == 302 and saved.url == f"{LIST}#template-{vision_template.pk}"
    vision_template.refresh_from_db()
    assert vision_template.profile["gpu_memory_gb"] == 60 and vision_template.profile["gpu_count"] == 2
    assert vision_template.command == ["python", "train.py", "--name", "big run"]
    event = AuditEvent.objects.get(object_type="allocations.requesttemplate", object_id=str(vision_template.pk))
    assert event.actor == demo_org.team_lead
    assert event.before["profile"]["gpu_memory_gb"] == 30 and event.after["profile"]["gpu_memory_gb"] == 60
    listing = client_for(demo_org.member).get(LIST).content.decode()
    assert "60 GB per replica" in listing and "2 GPUs x 1 replica" in listing
    assert reverse("allocations:template-edit", args=[vision_template.pk]) not in listing  # members only use it


def test_bad_values_are_refused_on_their_field_and_nothing_changes(
    demo_org: DemoOrg, vision_template: RequestTemplate
) -> None:
    url = reverse("allocations:template-edit", args=[vision_template.pk])
    lead = client_for(demo_org.team_lead)

    bad_memory = lead.post(url, form_values(gpu_memory_gb="-3"))
    bad_command = lead.post(url, form_values(command='python "unclosed'))

    assert bad_memory.status_code == 400 and "gpu_memory_gb" in bad_memory.context["form"].errors
    assert bad_command.status_code == 400 and "Not a command line" in str(bad_command.context["form"].errors["command"])
    vision_template.refresh_from_db()
    assert vision_template.profile["gpu_memory_gb"] == 30
    assert not AuditEvent.objects.filter(object_type="allocations.requesttemplate").exists()


def test_a_duplicate_name_is_refused_on_the_name(demo_org: DemoOrg, vision_template: RequestTemplate) -> None:
    response = client_for(demo_org.team_lead).post(NEW, form_values())

    assert response.status_code == 400
    assert "already offered to this team" in str(response.context["form"].errors["name"])
    assert RequestTemplate.objects.count() == 1


def test_members_and_other_teams_cannot_edit(demo_org: DemoOrg, vision_template: RequestTemplate) -> None:
    url = reverse("allocations:template-edit", args=[vision_template.pk])

    assert client_for(demo_org.member).get(url).status_code == 403
    assert client_for(demo_org.member).post(url, form_values(gpu_memory_gb="60")).status_code == 403
    assert client_for(demo_org.outsider).get(url).status_code == 404
    assert client_for(demo_org.member).get(NEW).status_code == 403
    vision_template.refresh_from_db()
    assert vision_template.profile["gpu_memory_gb"] == 30


def test_an_admin_creates_a_template_for_every_team_which_leads_cannot_edit(demo_org: DemoOrg) -> None:
    admin = client_for(demo_org.platform_admin)
    assert ">Every team</option>" in admin.get(NEW).content.decode()

    created = admin.post(NEW, form_values(name="Notebook", team="", workload_type="development", gpu_memory_gb="4"))

    assert created.status_code == 302
    template = RequestTemplate.objects.get(name="Notebook")
    assert template.team is None and template.created_by == demo_org.platform_admin
    assert AuditEvent.objects.filter(object_type="allocations.requesttemplate", object_id=str(template.pk)).exists()
    edit = reverse("allocations:template-edit", args=[template.pk])
    assert client_for(demo_org.team_lead).get(edit).status_code == 403
    assert edit not in client_for(demo_org.team_lead).get(LIST).content.decode()


def test_a_lead_cannot_move_a_template_to_a_team_they_do_not_lead(
    demo_org: DemoOrg, vision_template: RequestTemplate
) -> None:
    url = reverse("allocations:template-edit", args=[vision_template.pk])
    response = client_for(demo_org.team_lead).post(url, form_values(team="nlp"))
    to_everyone = client_for(demo_org.team_lead).post(url, form_values(team=""))

    assert response.status_code == 400 and "team" in response.context["form"].errors
    assert to_everyone.status_code == 400 and "team" in to_everyone.context["form"].errors
    vision_template.refresh_from_db()
    assert vision_template.team == demo_org.team


def test_delete_from_the_edit_page_is_audited(demo_org: DemoOrg, vision_template: RequestTemplate) -> None:
    lead = client_for(demo_org.team_lead)
    page = lead.get(reverse("allocations:template-edit", args=[vision_template.pk])).content.decode()
    assert reverse("allocations:template-delete", args=[vision_template.pk]) in page

    lead.post(reverse("allocations:template-delete", args=[vision_template.pk]))

    assert not RequestTemplate.objects.exists()
    assert AuditEvent.objects.filter(object_type="allocations.requesttemplate", action="delete").exists()
