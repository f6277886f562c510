"""/api/v1/clusters/ and /api/v1/clusters/{name}/node-pools/ (docs/api.md, "Clusters and node pools as code"): a role
matrix per verb, PUT creating or replacing by name, pools validated as the admin validates them, secret references never
shown back, field-named 400s, and nothing half-written."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from allocations.clusters.rendering import pool_context
from allocations.models import Cluster, NodePool, Quota
from tests.factories import ROLES, GpuRequestFactory, UserFactory

pytestmark = pytest.mark.django_db

CLUSTERS = "/api/v1/clusters/"
DEMO = "/api/v1/clusters/demo/"
POOLS = "/api/v1/clusters/demo/node-pools/"
READERS = {"platform_admin", "approver"}
NEW_CLUSTER = {
    "name": "prod-eu",
    "backend": "kubernetes",
    "api_endpoint": "https://k8s.example.com:6443",
    "kubeconfig_secret_ref": "env:PROD_EU_KUBECONFIG",
    "prometheus_url": "http://prometheus.monitoring:9090",
    "scheduler": "kueue",
}
MIG_POOL = {
    "name": "a100-mig",
    "gpu_model": "A100-40GB",
    "node_count": 2,
    "gpus_per_node": 8,
    "sharing_mode": "mig",
    "mig_devices": {"3g.20gb": 1, "2g.10gb": 1, "1g.5gb": 2},
    "node_labels": {"pool": "a100-mig"},
    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
}


def _send(client: APIClient, method: str, url: str, body: dict | None = None):
    return getattr(client, method)(
        url, data=json.dumps(body) if body is not None else None, content_type="application/json"
    )


# (method, url, body, status for a platform admin, for an approver)
MATRIX = [
    ("get", CLUSTERS, None, 200, 200),
    ("get", DEMO, None, 200, 200),
    ("post", CLUSTERS, NEW_CLUSTER, 201, 403),
    ("put", "/api/v1/clusters/prod-eu/", NEW_CLUSTER, 201, 403),
    ("patch", DEMO, {"description": "changed"}, 200, 403),
    ("delete", DEMO, None, 204, 403),
    ("get", POOLS, None, 200, 200),
    ("get", POOLS + "h100/", None, 200, 200),
    ("post", POOLS, MIG_POOL, 201, 403),
    ("put", POOLS + "a100-mig/", MIG_POOL, 201, 403),
    ("patch", POOLS + "h100/", {"node_count": 4}, 200, 403),
    ("delete", POOLS + "h100/", None, 204, 403),
]


@pytest.mark.parametrize("role", [*ROLES, "anonymous"])
@pytest.mark.parametrize(("method", "url", "body", "admin_status", "approver_status"), MATRIX)
def test_role_matrix(client_as, demo_org, role, method, url, body, admin_status, approver_status) -> None:
    client = APIClient() if role == "anonymous" else client_as(role)
    before = (Cluster.objects.count(), NodePool.objects.count(), list(Cluster.objects.values_list("description")))

    response = _send(client, method, url, body)

    expected = {"platform_admin": admin_status, "approver": approver_status, "anonymous": 401}.get(role, 403)
    assert response.status_code == expected, response.content
    if expected >= 400 or method == "get":
        after = (Cluster.objects.count(), NodePool.objects.count(), list(Cluster.objects.values_list("description")))
        assert after == before  # a refused call writes nothing


def test_a_staff_account_without_the_model_permission_cannot_write(demo_org) -> None:
    staff = UserFactory(username="staff-no-perms", is_staff=True)
    client = APIClient()
    client.force_authenticate(staff)
    assert client.get(CLUSTERS).status_code == 200  # staff are approvers: they read
    assert _send(client, "put", "/api/v1/clusters/prod-eu/", NEW_CLUSTER).status_code == 403
    staff.user_permissions.add(Permission.objects.get(codename="add_cluster"))
    staff = type(staff).objects.get(pk=staff.pk)  # drop the permission cache
    client.force_authenticate(staff)
    assert _send(client, "put", "/api/v1/clusters/prod-eu/", NEW_CLUSTER).status_code == 201
    # Replacing needs the change permission, which this account lacks.
    assert _send(client, "put", "/api/v1/clusters/prod-eu/", NEW_CLUSTER).status_code == 403


def test_put_creates_then_replaces_idempotently_and_never_shows_the_secret(client_as) -> None:
    admin = client_as("platform_admin")
    url = "/api/v1/clusters/prod-eu/"

    created = _send(admin, "put", url, NEW_CLUSTER)
    again = _send(admin, "put", url, NEW_CLUSTER)

    assert (created.status_code, again.status_code) == (201, 200)
    assert created.json() == {**again.json()}
    body = again.json()
    assert "kubeconfig_secret_ref" not in body and "PROD_EU_KUBECONFIG" not in again.content.decode()
    assert body["kubeconfig_secret_ref_stored"] is True
    assert body["scheduler"] == "kueue" and body["node_pools"] == []
    assert Cluster.objects.filter(name="prod-eu").count() == 1
    assert Cluster.objects.get(name="prod-eu").kubeconfig_secret_ref == "env:PROD_EU_KUBECONFIG"
    assert "PROD_EU_KUBECONFIG" not in admin.get(CLUSTERS).content.decode()

    # A replace resets what it omits to the defaults, but keeps an omitted secret reference; "" clears it.
    replaced = _send(
        admin, "put", url, {"name": "prod-eu", "backend": "kubernetes", "api_endpoint": "https://k.example.com"}
    )
    assert replaced.status_code == 200
    cluster = Cluster.objects.get(name="prod-eu")
    assert (cluster.scheduler, cluster.prometheus_url) == ("default", "")
    assert cluster.kubeconfig_secret_ref == "env:PROD_EU_KUBECONFIG"
    cleared = _send(admin, "patch", url, {"kubeconfig_secret_ref": ""})
    assert cleared.json()["kubeconfig_secret_ref_stored"] is False


def test_the_pull_reads_recording_rules_only_on_clusters_marked_so(client_as) -> None:
    admin = client_as("platform_admin")
    url = "/api/v1/clusters/prod-eu/"

    created = _send(admin, "put", url, NEW_CLUSTER)
    assert created.json()["prometheus_recording_rules"] is False  # existing clusters keep the subquery path
    marked = _send(admin, "patch", url, {"prometheus_recording_rules": True})
    assert marked.status_code == 200 and marked.json()["prometheus_recording_rules"] is True
    assert Cluster.objects.get(name="prod-eu").prometheus_recording_rules is True
    refused = _send(admin, "patch", url, {"prometheus_recording_rules": "sometimes"})
    assert refused.status_code == 400 and "prometheus_recording_rules" in refused.json()


def test_post_refuses_a_name_already_taken(client_as, demo_org) -> None:
    response = _send(client_as("platform_admin"), "post", CLUSTERS, {**NEW_CLUSTER, "name": "demo"})
    assert response.status_code == 400
    assert "PUT /clusters/demo/" in response.json()["name"][0]


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"kubeconfig_secret_ref": "apiVersion: v1\nclusters: []"}, "kubeconfig_secret_ref", "never paste a secret"),
        ({"kubeconfig_secret_ref": "", "api_endpoint": ""}, "kubeconfig_secret_ref", "needs an API endpoint"),
        ({"backend": "ftp"}, "backend", "not a valid choice"),
        ({"scheduler": "slurm"}, "scheduler", "not a valid choice"),
        ({"api_endpoint": "not a url"}, "api_endpoint", "valid URL"),
        ({"monitoring_namespace": "Not_A_Label"}, "monitoring_namespace", "DNS label"),
    ],
)
def test_bad_cluster_input_is_a_400_naming_the_field(client_as, body, field, message) -> None:
    response = _send(client_as("platform_admin"), "put", "/api/v1/clusters/prod-eu/", {**NEW_CLUSTER, **body})
    assert response.status_code == 400
    assert message in " ".join(response.json()[field])
    assert not Cluster.objects.filter(name="prod-eu").exists()


def test_a_bad_name_or_a_rename_is_refused(client_as, demo_org) -> None:
    admin = client_as("platform_admin")
    bad = _send(admin, "put", "/api/v1/clusters/Prod_EU/", {**NEW_CLUSTER, "name": "Prod_EU"})
    assert bad.status_code == 400 and "DNS label" in bad.json()["name"][0]
    renamed = _send(admin, "put", DEMO, {**NEW_CLUSTER, "name": "other"})
    assert renamed.status_code == 400 and "rename" in renamed.json()["name"][0]


def test_a_pool_put_is_validated_like_the_admin_and_shows_its_capacity(client_as, demo_org) -> None:
    admin = client_as("platform_admin")

    created = _send(admin, "put", POOLS + "a100-mig/", MIG_POOL)

    assert created.status_code == 201, created.content
    pool = created.json()
    assert pool["capacity"] == {"nvidia.com/mig-3g.20gb": 16, "nvidia.com/mig-2g.10gb": 16, "nvidia.com/mig-1g.5gb": 32}
    assert admin.get(DEMO).json()["node_pools"] == ["a100-mig", "h100"]
    assert _send(admin, "put", POOLS + "a100-mig/", MIG_POOL).status_code == 200
    assert NodePool.objects.filter(cluster=demo_org.cluster, name="a100-mig").count() == 1
    # A rack or block level for Kueue's topology-aware scheduling reaches the renderer's pool.
    block = {"topology_level": "cloud.google.com/gce-topology-block", "topology_required": True}
    patched = _send(admin, "patch", POOLS + "a100-mig/", block)
    assert patched.status_code == 200 and patched.json()["topology_level"] == block["topology_level"]
    rendered = pool_context(NodePool.objects.get(cluster=demo_org.cluster, name="a100-mig"))
    assert (rendered.topology_level, rendered.topology_required) == (block["topology_level"], True)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"mig_devices": {"4g.20gb": 2}}, "mig_devices", ""),  # 8 compute slices: no placement
        ({"mig_devices": {"9g.99gb": 1}}, "mig_devices", "9g.99gb"),
        ({"mig_devices": {}}, "mig_devices", "layout"),
        ({"mig_devices": {"1g.5gb": 0}}, "mig_devices", "greater than or equal to 1"),
        ({"gpu_model": "T4"}, "sharing_mode", "not MIG-capable"),
        ({"gpu_model": "B9000"}, "gpu_model", "does not exist"),
        ({"sharing_mode": "time-slicing", "mig_devices": {}}, "time_slice_replicas", "at least 2 replicas"),
        ({"sharing_mode": "none", "time_slice_replicas": 4, "mig_devices": {}}, "time_slice_replicas", "Only"),
        ({"time_slice_replicas": 1}, "time_slice_replicas", "greater than or equal to 2"),
        ({"taints": [{"key": "a", "effect": "Sometimes"}]}, "taints", "not a valid choice"),
        ({"node_count": -1}, "node_count", "greater than or equal to 0"),
        ({"topology_level": "not a label!"}, "topology_level", "node label key"),
        ({"topology_required": True}, "topology_required", "topology level"),
        ({"sharing_mode": "none", "mig_devices": {}, "dynamic_mig": True}, "dynamic_mig", "Only a MIG pool"),
    ],
)
def test_bad_pool_input_is_a_400_naming_the_field(client_as, demo_org, body, field, message) -> None:
    response = _send(client_as("platform_admin"), "put", POOLS + "a100-mig/", {**MIG_POOL, **body})
    # A well-formed name of a GPU model the catalog lacks is a 422 (portal.api_errors); the rest are malformed.
    assert response.status_code == (422 if message == "does not exist" else 400), response.content
    assert field in response.json(), response.json()
    assert message in json.dumps(response.json()[field])
    assert not NodePool.objects.filter(name="a100-mig").exists()


def test_a_refused_replace_leaves_the_pool_as_it_was(client_as, demo_org) -> None:
    before = NodePool.objects.values().get(pk=demo_org.pool.pk)
    response = _send(
        client_as("platform_admin"),
        "put",
        POOLS + "h100/",
        {"name": "h100", "gpu_model": "H100-80GB", "sharing_mode": "mig", "mig_devices": {"7g.80gb": 2}},
    )
    assert response.status_code == 400
    assert NodePool.objects.values().get(pk=demo_org.pool.pk) == before


def test_pools_of_an_unknown_cluster_are_404(client_as) -> None:
    admin = client_as("platform_admin")
    assert admin.get("/api/v1/clusters/nowhere/node-pools/").status_code == 404
    assert _send(admin, "put", "/api/v1/clusters/nowhere/node-pools/a/", MIG_POOL).status_code == 404
    assert admin.get("/api/v1/clusters/nowhere/").status_code == 404


def test_deleting_what_requests_ran_on_is_a_409_and_changes_nothing(client_as, demo_org) -> None:
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, cluster=demo_org.cluster, node_pool=demo_org.pool)
    admin = client_as("platform_admin")
    pool = _send(admin, "delete", POOLS + "h100/")
    cluster = _send(admin, "delete", DEMO)
    assert (pool.status_code, cluster.status_code) == (409, 409)
    assert "deactivate" in cluster.json()["detail"]
    assert NodePool.objects.filter(pk=demo_org.pool.pk).exists() and Quota.objects.exists()


def test_the_clusters_api_is_in_the_openapi_schema(tmp_path) -> None:
    import yaml
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    paths = schema["paths"]
    assert paths["/api/v1/clusters/{name}/"].keys() >= {"get", "put", "patch", "delete"}
    assert paths["/api/v1/clusters/{cluster_name}/node-pools/{name}/"].keys() >= {"get", "put", "patch", "delete"}
    cluster = schema["components"]["schemas"]["ClusterRequest"]["properties"]
    assert cluster["kubeconfig_secret_ref"]["writeOnly"] is True
    # The answer's shape has no secret reference at all, only whether one is stored.
    answer = schema["components"]["schemas"]["Cluster"]["properties"]
    assert "kubeconfig_secret_ref" not in answer and "kubeconfig_secret_ref_stored" in answer
    assert {"name", "backend", "api_endpoint", "gitops_path", "prometheus_url", "scheduler"} <= cluster.keys()
    pool = schema["components"]["schemas"]["NodePoolRequest"]["properties"]
    assert {"name", "gpu_model", "node_count", "gpus_per_node", "sharing_mode", "time_slice_replicas"} <= pool.keys()
    assert {"mig_devices", "node_labels", "taints"} <= pool.keys()


def test_the_cluster_list_stays_within_a_query_budget(client_as, demo_org, django_assert_max_num_queries) -> None:
    from tests.factories import ClusterFactory, NodePoolFactory

    for index in range(10):
        NodePoolFactory(cluster=ClusterFactory(name=f"c{index}"), name="pool")
    with django_assert_max_num_queries(4):
        assert len(client_as("approver").get(CLUSTERS).json()) == 11
