"""The API refuses what its OpenAPI schema forbids, and the schema documents what the API answers.

Query parameters are strict (a malformed page size, page, filter, field list or format is refused naming it), a
well-formed body naming an object the caller cannot use is a documented 422, and form bodies cannot carry null.
"""

from __future__ import annotations

import pytest
import yaml

from allocations.models import RequestTemplate

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/api/v1/templates/", "/api/v1/requests/", "/api/v1/quota-increases/"])
@pytest.mark.parametrize("value", ["null", "0", "-1", "x", "", "1.5"])
def test_a_malformed_page_size_is_a_400_naming_it(client_as, url, value) -> None:
    response = client_as("member").get(url, {"page_size": value})

    assert response.status_code == 400, response.content
    assert list(response.json()) == ["page_size"]


def test_a_page_size_over_the_maximum_counts_as_the_maximum(client_as) -> None:
    assert client_as("member").get("/api/v1/templates/", {"page_size": "100000"}).status_code == 200


@pytest.mark.parametrize(("value", "expected"), [("x", 400), ("", 400), ("0", 404), ("999", 404), ("1", 200)])
def test_a_malformed_page_is_a_400_and_a_missing_one_a_404(client_as, value, expected) -> None:
    response = client_as("member").get("/api/v1/templates/", {"page": value})

    assert response.status_code == expected, response.content
    if expected == 400:
        assert list(response.json()) == ["page"]


def test_an_empty_filter_is_a_400_naming_it(client_as) -> None:
    response = client_as("member").get("/api/v1/requests/", {"created_before": "", "status": "approved"})

    assert response.status_code == 400
    assert list(response.json()) == ["created_before"]
    assert client_as("member").get("/api/v1/requests/", {"status": "approved"}).status_code == 200


@pytest.mark.parametrize(("params", "field"), [({"brief": "maybe"}, "brief"), ({"fields": "id,json"}, "fields")])
def test_field_selection_is_strict(client_as, params, field) -> None:
    response = client_as("member").get("/api/v1/requests/", params)

    assert response.status_code == 400
    assert list(response.json()) == [field]


def test_an_empty_format_is_an_unknown_format(client_as) -> None:
    assert client_as("member").get("/api/v1/reports/", {"format": ""}).status_code == 404
    assert client_as("member").get("/api/v1/reports/", {"format": "json"}).status_code == 200


def test_a_body_naming_an_unknown_object_is_a_422_naming_the_field(client_as) -> None:
    body = {"quota": 987654, "requested_limit": 6, "reason": "More."}

    response = client_as("team_lead").post("/api/v1/quota-increases/", body, format="json")

    assert response.status_code == 422
    assert list(response.json()) == ["quota"]
    malformed = client_as("team_lead").post("/api/v1/quota-increases/", {**body, "quota": "x"}, format="json")
    assert malformed.status_code == 400  # not a well-formed id: the schema forbids it


def test_an_unknown_object_among_other_errors_stays_a_400(client_as) -> None:
    body = {"quota": 987654, "requested_limit": "many", "reason": "More."}

    response = client_as("team_lead").post("/api/v1/quota-increases/", body, format="json")

    assert response.status_code == 400
    assert set(response.json()) == {"quota", "requested_limit"}


@pytest.fixture
def schema(client) -> dict:
    return yaml.safe_load(client.get("/api/schema/").content)


def test_the_schema_documents_what_the_api_answers(schema) -> None:
    paths = schema["paths"]
    page_size = next(p for p in paths["/api/v1/templates/"]["get"]["parameters"] if p["name"] == "page_size")
    assert page_size["schema"] == {"type": "integer", "minimum": 1}
    assert "404" in paths["/api/v1/quota-increases/"]["get"]["responses"]  # a page past the last
    assert "422" in paths["/api/v1/quota-increases/"]["post"]["responses"]  # a quota that is not yours
    assert "422" in paths["/api/v1/templates/"]["post"]["responses"]  # a team that is not yours
    assert "422" not in paths["/api/v1/requests/{id}/cancel/"]["post"]["responses"]  # names no object
    status = next(p for p in paths["/api/v1/requests/"]["get"]["parameters"] if p["name"] == "status")
    assert status["schema"]["items"]["minLength"] == 1 or status["schema"].get("minLength") == 1
    fields = next(p for p in paths["/api/v1/requests/{id}/"]["get"]["parameters"] if p["name"] == "fields")
    assert "waiting" in fields["schema"]["items"]["enum"] and fields["explode"] is False


def test_form_bodies_cannot_carry_null(schema) -> None:
    body = schema["paths"]["/api/v1/recommendations/"]["post"]["requestBody"]["content"]
    json_ref = body["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    form_ref = body["multipart/form-data"]["schema"]["$ref"].rsplit("/", 1)[1]
    components = schema["components"]["schemas"]
    assert components[json_ref]["properties"]["cluster"]["nullable"] is True
    assert form_ref == f"{json_ref}Form"
    assert not any("nullable" in field for field in components[form_ref]["properties"].values())
    assert components[json_ref]["properties"]["gpu_memory_gb"]["multipleOf"] == 0.000001


def test_a_filter_naming_an_unknown_team_is_a_404_and_a_malformed_one_a_400(client_as) -> None:
    assert client_as("member").get("/api/v1/requests/", {"team": "no-such-team"}).status_code == 404
    assert client_as("member").get("/api/v1/requests/", {"status": "sleeping"}).status_code == 400


def test_another_teams_slug_in_the_filter_answers_as_an_unknown_one(client_as, demo_org) -> None:
    member = client_as("member")

    theirs = member.get("/api/v1/requests/", {"team": demo_org.other_team.slug})
    unknown = member.get("/api/v1/requests/", {"team": "no-such-team"})

    assert theirs.status_code == unknown.status_code == 404
    assert theirs.json()["detail"] == unknown.json()["detail"].replace("no-such-team", demo_org.other_team.slug)
    assert member.get("/api/v1/requests/", {"team": demo_org.team.slug}).status_code == 200


def test_an_empty_month_is_malformed(client_as) -> None:
    response = client_as("member").get("/api/v1/reports/", {"month": ""})

    assert response.status_code == 400
    assert list(response.json()) == ["month"]


def test_a_profile_naming_an_unknown_tier_or_model_is_a_422(client_as) -> None:
    profile = {"workload_type": "training", "gpu_memory_gb": 40}
    client = client_as("member")

    tier = client.post("/api/v1/recommendations/", {**profile, "sla_tier": "gold"}, format="json")
    model = client.post(
        "/api/v1/requests/",
        {**profile, "team": "vision", "name": "x", "gpu_model": "Z9", "command": ["python", "train.py"]},
        format="json",
    )

    assert (tier.status_code, list(tier.json())) == (422, ["sla_tier"])
    assert (model.status_code, list(model.json())) == (422, ["gpu_model"])
    assert client.post("/api/v1/recommendations/", {**profile, "gpu_memory_gb": -1}, format="json").status_code == 400


def test_templates_take_json_only(client_as) -> None:
    body = {"name": "Preset", "team": "vision", "profile": '{"workload_type": "training"}'}

    # 400 rather than 415: the NUL middleware has read the form, so DRF sees no body it may parse.
    assert client_as("team_lead").post("/api/v1/templates/", body).status_code in (400, 415)  # multipart
    assert not RequestTemplate.objects.filter(name="Preset").exists()


def test_the_schema_states_dr_fs_own_rules(schema) -> None:
    components = schema["components"]["schemas"]
    assert components["ProfileInputRequest"]["additionalProperties"] is False  # the core names unknown keys
    assert components["QuotaIncreaseRequest"]["properties"]["reason"]["pattern"] == r"\S"  # trimmed, then not blank
    month = next(p for p in schema["paths"]["/api/v1/reports/"]["get"]["parameters"] if p["name"] == "month")
    assert month["schema"]["pattern"].startswith("^")
