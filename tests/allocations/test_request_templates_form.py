"""The new-request form starts from a template: the picker lists those offered to the user's teams, ``?template=``
fills the form in (404 for another team's), and the filled form submits; the demo's templates place on its pools."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from allocations.models import GpuRequest, RequestTemplate, WorkloadType
from allocations.requests.services import gpu_request_submit
from allocations.selectors import teams_of
from tests.factories import DemoOrg

pytestmark = pytest.mark.django_db

NEW = reverse("allocations:request-new")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def vision_template(demo_org: DemoOrg) -> RequestTemplate:
    return RequestTemplate.objects.create(
        name="Vision fine-tune",
        description="One GPU for a day.",
        team=demo_org.team,
        profile={"workload_type": "training", "gpu_memory_gb": 30, "sla_tier": "tier2_batch", "duration_hours": 24},
        image="nvcr.io/nvidia/pytorch:24.05-py3",
        command=["python", "finetune.py", "--epochs", "10"],
    )


def test_the_picker_lists_the_templates_offered_to_the_users_teams(demo_org: DemoOrg, vision_template) -> None:
    RequestTemplate.objects.create(name="Everyone's", profile={"workload_type": "development", "gpu_memory_gb": 4})
    RequestTemplate.objects.create(
        name="NLP only", team=demo_org.other_team, profile={"workload_type": "training", "gpu_memory_gb": 8}
    )

    html = client_for(demo_org.member).get(NEW).content.decode()

    assert 'id="template-picker"' in html
    assert "Vision fine-tune · Vision" in html and "Everyone&#x27;s · Every team" in html
    assert "NLP only" not in html


def test_a_template_fills_the_form_in(demo_org: DemoOrg, vision_template) -> None:
    response = client_for(demo_org.member).get(NEW, {"template": vision_template.pk})

    assert response.status_code == 200
    form = response.context["form"]
    assert form["team"].value() == "vision"
    assert form["workload_type"].value() == "training"
    assert form["gpu_memory_gb"].value() == 30 and form["duration_hours"].value() == 24
    assert form["sla_tier"].value() == "tier2_batch"
    assert form["command"].value() == "python finetune.py --epochs 10"
    assert "Filled in from “Vision fine-tune”: One GPU for a day." in response.content.decode()


def test_another_teams_template_is_404_in_the_form(demo_org: DemoOrg, vision_template) -> None:
    assert client_for(demo_org.outsider).get(NEW, {"template": vision_template.pk}).status_code == 404
    assert client_for(demo_org.member).get(NEW, {"template": "x"}).status_code == 404


def test_the_filled_form_submits(demo_org: DemoOrg, vision_template) -> None:
    client = client_for(demo_org.member)
    form = client.get(NEW, {"template": vision_template.pk}).context["form"]
    data = {name: form[name].value() for name in form.fields if form[name].value() not in (None, "")}
    data.pop("submit_duplicate", None)

    response = client.post(NEW, {**data, "name": "weekly-finetune"})

    assert response.status_code == 302, response.context["form"].errors
    request = GpuRequest.objects.get(name="weekly-finetune")
    assert request.gpu_memory_gb == 30 and request.command == ["python", "finetune.py", "--epochs", "10"]


def test_any_request_of_the_team_offers_a_clone_whatever_its_status(demo_org: DemoOrg) -> None:
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="train",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40},
    )

    member = client_for(demo_org.member).get(reverse("allocations:request-detail", args=[request.pk]))
    outsider_view = client_for(demo_org.approver).get(reverse("allocations:request-detail", args=[request.pk]))

    assert 'id="clone-request"' in member.content.decode()
    assert 'id="clone-request"' not in outsider_view.content.decode()  # approvers are not in the team


def test_the_demo_templates_each_make_a_request_on_the_demo_pools(settings, django_user_model) -> None:
    settings.DEBUG = True
    call_command("seed_demo", no_usage=True, stdout=open("/dev/null", "w"))  # noqa: SIM115
    alice = django_user_model.objects.get(username="alice")
    team = teams_of(alice).get()
    names = set(RequestTemplate.objects.values_list("name", flat=True))
    assert {"Jupyter notebook, T4 share, 8 h", "LLM inference 7B", "Multi-node training"} <= names

    for template in RequestTemplate.objects.filter(team__isnull=True):
        client = client_for(alice)
        form = client.get(NEW, {"template": template.pk}).context["form"]
        data = {name: form[name].value() for name in form.fields if form[name].value() not in (None, "")}
        response = client.post(NEW, {**data, "team": team.slug, "name": f"from-{template.pk}"})
        assert response.status_code in (302, 400)
        made = GpuRequest.objects.filter(name=f"from-{template.pk}").first()
        if made is None:  # refused by quota only: the template itself is valid and placed
            errors = response.context["form"].errors
            assert set(errors) == {"__all__"} and "quota" in str(errors).lower(), errors
            continue
        assert made.workload_type in WorkloadType.values


def test_a_lead_saves_a_request_as_a_team_template_and_deletes_it(demo_org: DemoOrg) -> None:
    request = gpu_request_submit(
        acting_user=demo_org.member,
        team=demo_org.team,
        name="detector",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40, "duration_hours": 12},
        command=["python", "train.py"],
    )
    detail = reverse("allocations:request-detail", args=[request.pk])
    lead = client_for(demo_org.team_lead)
    assert 'id="save-template"' in lead.get(detail).content.decode()
    assert 'id="save-template"' not in client_for(demo_org.member).get(detail).content.decode()

    saved = lead.post(reverse("allocations:request-save-template", args=[request.pk]), {"name": "Detector run"})

    assert saved.status_code == 302
    template = RequestTemplate.objects.get(name="Detector run")
    assert template.team == demo_org.team and template.command == ["python", "train.py"]
    assert template.profile["gpu_memory_gb"] == 40 and template.profile["duration_hours"] == 12
    listing = lead.get(reverse("allocations:template-list")).content.decode()
    assert f"?template={template.pk}" in listing and "Delete" in listing
    refused = client_for(demo_org.member).post(reverse("allocations:template-delete", args=[template.pk]))
    assert refused.status_code == 403
    assert (
        client_for(demo_org.outsider).post(reverse("allocations:template-delete", args=[template.pk])).status_code
        == 404
    )
    lead.post(reverse("allocations:template-delete", args=[template.pk]))
    assert not RequestTemplate.objects.filter(pk=template.pk).exists()


def test_a_member_cannot_save_a_template(demo_org: DemoOrg) -> None:
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="detector",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40},
    )

    response = client_for(demo_org.member).post(
        reverse("allocations:request-save-template", args=[request.pk]), {"name": "mine"}
    )

    assert response.status_code == 403 and not RequestTemplate.objects.exists()
