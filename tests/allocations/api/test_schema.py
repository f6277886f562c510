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


def _refs(node: object) -> list[str]:
    """Every ``$ref`` anywhere in a schema tree."""
    if isinstance(node, dict):
        own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return own + [ref for value in node.values() for ref in _refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in _refs(value)]
    return []


def test_the_schema_has_no_dangling_refs(client) -> None:
    """Every ``$ref`` in the served schema (the one clients and schemathesis read) points at a component it defines."""
    schema = yaml.safe_load(client.get("/api/schema/").content)
    refs = _refs(schema)
    components = {
        f"#/components/{section}/{name}" for section, entries in schema["components"].items() for name in entries
    }
    dangling = sorted({ref for ref in refs if ref not in components})
    print(f"\n{len(refs)} $refs to {len(components)} components, {len(dangling)} dangling")
    assert len(refs) > 50
    assert dangling == []


def test_field_selection_answers_are_documented_as_partial_and_the_rest_stay_strict(client) -> None:
    """``?fields=``/``?omit=`` may leave any field out: the list and detail say so; submitting still answers it all."""
    schema = yaml.safe_load(client.get("/api/schema/").content)
    components = schema["components"]["schemas"]
    answers = {
        (path, method): operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
        for path, item in schema["paths"].items()
        for method, operation in item.items()
        if path in ("/api/v1/requests/", "/api/v1/requests/{id}/") and method == "get"
    }
    assert answers == {
        ("/api/v1/requests/", "get"): "#/components/schemas/PaginatedGpuRequestSelectableList",
        ("/api/v1/requests/{id}/", "get"): "#/components/schemas/GpuRequestDetailSelectable",
    }
    assert "required" not in components["GpuRequestSelectable"]
    assert "required" not in components["GpuRequestDetailSelectable"]
    assert components["GpuRequestSelectable"]["properties"] == components["GpuRequest"]["properties"]
    assert components["GpuRequestDetailSelectable"]["properties"] == components["GpuRequestDetail"]["properties"]
    assert "activated_at" in components["GpuRequest"]["required"]  # the full answer (submit, actions) stays strict
    # The detail adds where a request waits; the list's items do not carry it.
    detail = components["GpuRequestDetail"]["properties"]
    assert set(detail) - set(components["GpuRequest"]["properties"]) == {"waiting", "run_time"}
    assert "waiting" in components["GpuRequestDetail"]["required"]
