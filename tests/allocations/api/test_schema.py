"""The OpenAPI schema documents every allocations endpoint and generates without a warning."""

from __future__ import annotations

import yaml
from django.core.management import call_command


def test_schema_is_valid_without_warnings(tmp_path):
    target = tmp_path / "schema.yaml"

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))

    schema = yaml.safe_load(target.read_text())
    assert {
        "/api/v1/recommendations/",
        "/api/v1/requests/",
        "/api/v1/requests/{id}/",
        "/api/v1/requests/{id}/approve/",
        "/api/v1/requests/{id}/reject/",
        "/api/v1/requests/{id}/cancel/",
        "/api/v1/requests/{id}/release/",
        "/api/v1/requests/{id}/events/",
        "/api/v1/teams/",
        "/api/v1/teams/{slug}/",
        "/api/v1/mig-plans/preview/",
    } <= schema["paths"].keys()
    recommendation = schema["components"]["schemas"]["Recommendation"]["properties"]
    assert recommendation["alternatives"]["items"] == {"$ref": "#/components/schemas/Alternative"}
    assert recommendation["estimated_monthly_cost"] == {"$ref": "#/components/schemas/Money"}
    assert schema["paths"]["/api/v1/requests/{id}/approve/"]["post"]["responses"].keys() >= {"202", "403", "409"}


def test_the_mig_plan_preview_is_documented(tmp_path):
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    preview = schema["paths"]["/api/v1/mig-plans/preview/"]["post"]
    assert preview["responses"].keys() >= {"200", "400", "403"}
    assert schema["components"]["schemas"]["MigPlanPreview"]["properties"].keys() == {"gpu_model", "gpu_count", "gpus"}
