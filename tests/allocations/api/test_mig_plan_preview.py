"""POST /api/v1/mig-plans/preview/: the role matrix, the contract (docs/kubernetes-and-kueue.md, "Preview"), exact
optima, field-named 400s."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from gpucore.catalog import BUILTIN_CATALOG
from gpucore.manifests import check_mig_layout
from tests.factories import ROLES

URL = "/api/v1/mig-plans/preview/"
BODY = {"gpu_model": "A100-40GB", "demand": {"3g.20gb": 1, "1g.5gb": 9}}

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("role", "status"), list(zip(ROLES, [200, 200, 403, 403, 403], strict=True)))
def test_only_approvers_and_admins_preview(client_as, role, status):
    response = client_as(role).post(URL, BODY, format="json")
    assert response.status_code == status, response.content
    if status == 403:
        assert "approvers" in response.json()["detail"]


def test_anonymous_is_refused(demo_org):
    assert APIClient().post(URL, BODY, format="json").status_code == 401


def test_the_design_example_answers_the_contract(client_as):
    body = client_as("approver").post(URL, BODY, format="json").json()
    assert set(body) == {"gpu_model", "gpu_count", "gpus"}
    assert body["gpu_model"] == "A100-40GB" and body["gpu_count"] == 2 == len(body["gpus"])
    model = BUILTIN_CATALOG.get("A100-40GB")
    hosted = {"3g.20gb": 0, "1g.5gb": 0}
    for gpu in body["gpus"]:
        assert set(gpu) == {"instances", "placement", "gpu_share"}
        assert check_mig_layout(model, gpu["instances"]) == gpu["instances"]
        placed: dict[str, int] = {}
        for item in gpu["placement"]:
            name, start = item.split("@")
            assert int(start) in model.profile(name).placement_starts
            placed[name] = placed.get(name, 0) + 1
        assert placed == gpu["instances"]
        assert set(gpu["gpu_share"]) == set(gpu["instances"])
        for name in hosted:
            hosted[name] += gpu["instances"].get(name, 0)
    assert hosted["3g.20gb"] >= 1 and hosted["1g.5gb"] >= 9


def test_an_a30_demand_needs_the_optimum_not_first_fit(client_as):
    # 2 x 2g.12gb + 4 x 1g.6gb + 1 x 4g.24gb: three A30s exactly (4 + 4 + 4 memory slices).
    body = {"gpu_model": "A30", "demand": {"2g.12gb": 2, "1g.6gb": 4, "4g.24gb": 1}}
    answer = client_as("platform_admin").post(URL, body, format="json").json()
    assert answer["gpu_count"] == 3


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({"gpu_model": "B999", "demand": {"1g.5gb": 1}}, "gpu_model", "Unknown GPU model"),
        ({"gpu_model": "T4", "demand": {"1g.5gb": 1}}, "gpu_model", "not MIG-capable"),
        ({"gpu_model": "A100-40GB", "demand": {"1g.6gb": 1}}, "demand", "no MIG profile '1g.6gb'"),
        ({"gpu_model": "A100-40GB", "demand": {"1g.5gb": -1}}, "demand", "greater than or equal to 0"),
        ({"gpu_model": "A100-40GB", "demand": {"1g.5gb": 0}}, "demand", "at least one"),
        ({"gpu_model": "A100-40GB", "demand": {}}, "demand", "may not be empty"),
        ({"gpu_model": "A100-40GB", "demand": {"1g.5gb": 10**6}}, "demand", "At most"),
        ({"demand": {"1g.5gb": 1}}, "gpu_model", "required"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(client_as, body, field, text):
    response = client_as("approver").post(URL, body, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()
    assert list(errors) == [field]
    assert text in str(errors[field])
