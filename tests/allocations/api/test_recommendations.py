"""POST /api/v1/recommendations/: the role matrix, the contract, field-named 400s, and no side effects."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from allocations.models import GpuRequest, RequestEvent
from tests.factories import ROLES
from tests.gpucore.decision.cases import CORE_FIELDS

URL = "/api/v1/recommendations/"
PROFILE = {"workload_type": "training", "gpu_memory_gb": 40}

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("role", ROLES)
def test_every_role_gets_a_recommendation(client_as, role):
    response = client_as(role).post(URL, PROFILE, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert CORE_FIELDS | {"rationale", "alternatives"} <= body.keys()
    assert body["strategy"] == "dedicated"
    assert body["resource_name"] == "nvidia.com/gpu"
    assert body["gpu_model"] == "H100-80GB"
    assert set(body["estimated_monthly_cost"]) == {"amount", "currency"}
    assert body["estimated_monthly_cost"]["currency"] == "USD"
    assert all(isinstance(line, str) for line in body["rationale"])
    for alternative in body["alternatives"]:
        assert CORE_FIELDS | {"tradeoffs"} <= alternative.keys()


def test_anonymous_is_refused(demo_org):
    assert APIClient().post(URL, PROFILE, format="json").status_code == 401


def test_preview_is_what_a_submission_freezes(client_as, submit):
    # A MIG-intent profile on a cluster with only a dedicated pool: the preview must show the placed fallback too.
    profile = {"workload_type": "realtime_inference", "gpu_memory_gb": 8}
    preview = client_as("member").post(URL, profile, format="json").json()

    request = submit(**profile)

    assert preview == request.spec
    assert preview["strategy"] == "dedicated"


def test_cluster_narrows_the_placement(client_as, demo_org):
    response = client_as("member").post(URL, {**PROFILE, "cluster": demo_org.cluster.name}, format="json")

    assert response.status_code == 200


@pytest.mark.parametrize(
    ("body", "field", "expected"),
    [
        ({"gpu_memory_gb": 40}, "workload_type", 400),
        ({"workload_type": "training"}, "gpu_memory_gb", 400),
        ({"workload_type": "mining", "gpu_memory_gb": 40}, "workload_type", 400),
        ({**PROFILE, "gpu_memory_gb": -1}, "gpu_memory_gb", 400),
        ({**PROFILE, "gpu_memory_gb": "lots"}, "gpu_memory_gb", 400),
        ({**PROFILE, "gpu_count": 0}, "gpu_count", 400),
        ({**PROFILE, "replicas": 1.5}, "replicas", 400),
        ({**PROFILE, "expected_utilization_pct": 101}, "expected_utilization_pct", 400),
        ({**PROFILE, "latency_sensitive": "perhaps"}, "latency_sensitive", 400),
        ({**PROFILE, "sla_tier": "platinum"}, "sla_tier", 422),
        ({**PROFILE, "gpu_model": "A30"}, "gpu_model", 422),
        ({**PROFILE, "gpu_model": "Z9000"}, "gpu_model", 422),
        ({**PROFILE, "colour": "green"}, "colour", 400),
        ({**PROFILE, "cluster": "nowhere"}, "cluster", 422),
        ({**PROFILE, "gpu_memory_gb": 100_000}, "gpu_memory_gb", 400),
    ],
)
def test_bad_profile_is_refused_naming_the_field(client_as, body, field, expected):
    """Malformed: 400; well formed but naming what the catalog, tiers or pools lack: 422."""
    response = client_as("member").post(URL, body, format="json")

    assert response.status_code == expected, response.content
    errors = response.json()
    assert field in errors, errors
    assert all(isinstance(message, str) and message for message in errors[field])


def test_every_bad_field_is_named_at_once(client_as):
    response = client_as("member").post(URL, {"gpu_memory_gb": 0, "gpu_count": "x"}, format="json")

    assert response.status_code == 400
    assert {"workload_type", "gpu_memory_gb", "gpu_count"} <= response.json().keys()


def test_a_body_that_is_not_an_object_is_400(client_as):
    response = client_as("member").post(URL, [PROFILE], format="json")

    assert response.status_code == 400
    assert "non_field_errors" in response.json()


def test_no_pool_at_all_is_422_naming_cluster(client_as, demo_org):
    demo_org.cluster.is_active = False
    demo_org.cluster.save()

    response = client_as("member").post(URL, PROFILE, format="json")

    assert response.status_code == 422
    assert "cluster" in response.json()


def test_recommendation_has_no_side_effects(client_as, submit):
    submit()
    client = client_as("member")
    before = (GpuRequest.objects.count(), RequestEvent.objects.count())

    with CaptureQueriesContext(connection) as queries:
        response = client.post(URL, PROFILE, format="json")

    assert response.status_code == 200
    assert (GpuRequest.objects.count(), RequestEvent.objects.count()) == before
    writes = [q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert writes == []


@pytest.mark.parametrize(
    "profile",
    [
        {"workload_type": "training", "gpu_memory_gb": 40, "duration_hours": 48},
        {"workload_type": "development", "gpu_memory_gb": 4, "replicas": 2},
        {"workload_type": "realtime_inference", "gpu_memory_gb": 8, "sla_tier": "tier2_batch"},
    ],
)
def test_the_answer_is_exactly_what_the_documented_serializer_gives(client_as, profile):
    # The view answers the frozen spec as it is (no serializer pass): it must be the documented shape,
    # field for field and in the same order, as RecommendationSerializer would have written it.
    from allocations.api.serializers import RecommendationSerializer

    body = client_as("member").post(URL, profile, format="json").json()

    documented = RecommendationSerializer(body).data
    assert list(body) == list(documented)
    assert body == documented
    for answered, written in zip(body["alternatives"], documented["alternatives"], strict=True):
        assert list(answered) == list(written)


def test_a_cluster_made_inactive_is_refused_at_the_next_call(client_as, demo_org):
    # The cluster field's copies share one declared queryset: each call must still read the clusters anew.
    client = client_as("member")
    assert client.post(URL, {**PROFILE, "cluster": demo_org.cluster.name}, format="json").status_code == 200
    demo_org.cluster.is_active = False
    demo_org.cluster.save()
    response = client.post(URL, {**PROFILE, "cluster": demo_org.cluster.name}, format="json")
    assert response.status_code == 422
    assert list(response.json()) == ["cluster"]
