"""GET /api/v1/requests/{id}/manifests/: the rendered objects as JSON or one multi-document YAML, scoped by team."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from rest_framework.test import APIClient

from allocations.models import GpuRequest, RequestStatus
from allocations.requests.services import gpu_request_approve
from tests.factories import ROLES

pytestmark = pytest.mark.django_db

SEES = {"platform_admin": 200, "approver": 200, "team_lead": 200, "member": 200, "outsider": 404}


@pytest.fixture(autouse=True)
def gitops_root(settings, tmp_path: Path) -> Path:
    settings.PORTAL_GITOPS_ROOT = tmp_path / "gitops"
    return tmp_path


@pytest.fixture
def rendered(demo_org, submit, django_capture_on_commit_callbacks) -> GpuRequest:
    """A request approved and provisioned on the demo cluster (GitOps): its objects are rendered and kept."""
    request = submit(sla_tier="tier2_batch")
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request_approve(request=request, acting_user=demo_org.approver)
    request.refresh_from_db()
    assert request.status == RequestStatus.ACTIVE
    return request


def url(request: GpuRequest, query: str = "") -> str:
    return f"/api/v1/requests/{request.pk}/manifests/{query}"


@pytest.mark.parametrize("role", ROLES)
def test_json_role_matrix(client_as, rendered, role) -> None:
    response = client_as(role).get(url(rendered))

    assert response.status_code == SEES[role]
    if response.status_code == 200:
        assert response["Content-Type"] == "application/json"
        assert response.json() == rendered.manifests
    else:
        assert response.json() == {"detail": "No GpuRequest matches the given query."}


def test_json_is_the_objects_in_apply_order(client_as, rendered) -> None:
    objects = client_as("member").get(url(rendered)).json()

    kinds = [obj["kind"] for obj in objects]
    assert kinds[:2] == ["PriorityClass", "Namespace"] and kinds[-1] == "Job"
    job = objects[-1]
    assert job["metadata"]["name"] == f"gpr-{rendered.pk}" and job["metadata"]["namespace"] == "team-vision"
    assert job["metadata"]["labels"]["gpu-portal/request"] == str(rendered.pk)


@pytest.mark.parametrize("role", ROLES)
def test_yaml_role_matrix(client_as, rendered, role) -> None:
    response = client_as(role).get(url(rendered, "?format=yaml"))

    assert response.status_code == SEES[role]
    assert response["Content-Type"] == "application/yaml; charset=utf-8"
    if response.status_code == 200:
        text = response.content.decode()
        assert text.startswith("---\n") and text.count("\n---\n") == len(rendered.manifests) - 1
        assert list(yaml.safe_load_all(text)) == rendered.manifests
    else:
        assert yaml.safe_load(response.content) == {"detail": "No GpuRequest matches the given query."}


def test_yaml_by_accept_header(client_as, rendered) -> None:
    response = client_as("member").get(url(rendered), HTTP_ACCEPT="application/yaml")

    assert response.status_code == 200
    assert list(yaml.safe_load_all(response.content)) == rendered.manifests


def test_token_auth_works_from_a_notebook(demo_org, rendered) -> None:
    from tests.factories import api_key_for

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_key_for(user=demo_org.member).key}")

    assert client.get(url(rendered, "?format=yaml")).status_code == 200


@pytest.mark.parametrize("query", ["", "?format=yaml"])
def test_not_rendered_yet_is_a_clear_404(client_as, submit, query) -> None:
    request = submit()

    response = client_as("member").get(url(request, query))

    assert response.status_code == 404
    body = yaml.safe_load(response.content)  # JSON is YAML too
    assert "not rendered yet" in body["detail"]


def test_anonymous_callers_are_refused(rendered) -> None:
    response = APIClient().get(url(rendered))

    assert response.status_code in (401, 403)


def test_an_unknown_format_is_404(client_as, rendered) -> None:
    assert client_as("member").get(url(rendered, "?format=xml")).status_code == 404


def test_reads_are_few(client_as, rendered, django_assert_max_num_queries) -> None:
    client = client_as("member")

    with django_assert_max_num_queries(6):
        assert client.get(url(rendered)).status_code == 200


def test_schema_documents_both_media_types(tmp_path) -> None:
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))

    operation = yaml.safe_load(target.read_text())["paths"]["/api/v1/requests/{id}/manifests/"]["get"]
    assert operation["responses"]["200"]["content"].keys() == {"application/json", "application/yaml"}
    assert operation["responses"]["200"]["content"]["application/json"]["schema"]["type"] == "array"
    assert {"404", "401", "403"} <= operation["responses"].keys()
    (fmt,) = [p for p in operation["parameters"] if p["name"] == "format"]
    assert fmt["schema"]["enum"] == ["json", "yaml"]
