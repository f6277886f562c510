"""GET /api/v1/clusters/{name}/manifests/: a cluster's own objects (GPU Operator ConfigMaps, PriorityClasses and, with
Kueue, its queues) for approvers, as JSON or YAML; 403 for everyone else, 404 for an unknown cluster."""

from __future__ import annotations

import pytest
import yaml

from allocations.models import ClusterScheduler, GpuModel, NodePool, Quota
from tests.factories import ROLES, NodePoolFactory, QuotaFactory
from tests.gpucore.manifests.kueue_validation import validate_kueue

pytestmark = pytest.mark.django_db

STATUS = {"platform_admin": 200, "approver": 200, "team_lead": 403, "member": 403, "outsider": 403}
URL = "/api/v1/clusters/demo/manifests/"


@pytest.fixture
def kueue_cluster(demo_org):
    """The demo cluster run by Kueue, with a time-sliced T4 pool that renames shares, and cluster quotas."""
    demo_org.cluster.scheduler = ClusterScheduler.KUEUE
    demo_org.cluster.save()
    NodePoolFactory(
        cluster=demo_org.cluster,
        name="t4-shared",
        gpu_model=GpuModel.objects.get(name="T4"),
        sharing_mode="time-slicing",
        time_slice_replicas=4,
        rename_by_default=True,
        taints=[],
    )
    Quota.objects.all().delete()
    QuotaFactory(team=demo_org.team, cluster=demo_org.cluster, limit=8, borrowing_limit=4, lending_limit=2)
    QuotaFactory(team=demo_org.team, cluster=demo_org.cluster, resource_name="nvidia.com/gpu.shared", limit=16)
    QuotaFactory(team=demo_org.other_team, node_pool=demo_org.pool, limit=4)
    return demo_org


@pytest.mark.parametrize("role", ROLES)
def test_role_matrix(client_as, demo_org, role) -> None:
    response = client_as(role).get(URL)
    assert response.status_code == STATUS[role]
    if response.status_code == 403:
        assert response.json() == {"detail": "Only platform approvers and admins can read a cluster's manifests."}


def test_a_default_cluster_serves_priority_classes_and_gpu_operator_configs(client_as, demo_org) -> None:
    objects = client_as("approver").get(URL).json()
    assert [o["kind"] for o in objects] == [*["PriorityClass"] * 3, "ConfigMap", "ConfigMap"]
    assert {o["metadata"]["name"] for o in objects if o["kind"] == "ConfigMap"} == {
        "gpu-portal-device-plugin-config",
        "gpu-portal-mig-parted-config",
    }


def test_a_kueue_cluster_serves_its_queues_with_the_quotas(client_as, kueue_cluster) -> None:
    objects = client_as("approver").get(URL).json()
    kueue = [o for o in objects if o["apiVersion"] == "kueue.x-k8s.io/v1beta2"]
    for obj in kueue:
        validate_kueue(obj)
    named = {(o["kind"], o["metadata"]["name"]): o for o in kueue}
    assert {name for kind, name in named if kind == "ResourceFlavor"} == {"h100", "t4-shared"}
    vision = named["ClusterQueue", "vision"]["spec"]
    assert vision["cohortName"] == "demo"
    (group,) = vision["resourceGroups"]
    assert group["coveredResources"] == ["nvidia.com/gpu", "nvidia.com/gpu.shared"]
    flavors = {f["name"]: {r["name"]: r for r in f["resources"]} for f in group["flavors"]}
    # A cluster quota becomes a ceiling on each pool advertising the resource: the H100 pool has whole GPUs, the
    # renamed T4 pool has shares only, so each flavor carries its own resource and 0 of the other.
    assert flavors["h100"]["nvidia.com/gpu"] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": 8,
        "borrowingLimit": 4,
        "lendingLimit": 2,
    }
    assert flavors["t4-shared"]["nvidia.com/gpu.shared"]["nominalQuota"] == 16
    assert flavors["t4-shared"]["nvidia.com/gpu"]["nominalQuota"] == 0
    nlp = named["ClusterQueue", "nlp"]["spec"]["resourceGroups"][0]
    assert [f["name"] for f in nlp["flavors"]] == ["h100"]  # nlp's pool quota covers the H100 pool only
    assert ("LocalQueue", "default") in named


def test_yaml_is_one_document_per_object(client_as, kueue_cluster) -> None:
    response = client_as("platform_admin").get(URL, {"format": "yaml"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    documents = list(yaml.safe_load_all(response.content))
    assert documents == client_as("platform_admin").get(URL).json()


def test_unknown_cluster_is_404_and_an_unrenderable_one_409(client_as, demo_org) -> None:
    assert client_as("approver").get("/api/v1/clusters/nowhere/manifests/").status_code == 404
    # A MIG layout that cannot be placed (saved without validation, as an old row might be): 409 with the reason.
    NodePool.objects.filter(pk=demo_org.pool.pk).update(sharing_mode="mig", mig_devices={"7g.80gb": 1, "1g.10gb": 1})
    response = client_as("approver").get(URL)
    assert response.status_code == 409
    assert "Cluster demo cannot be rendered" in response.json()["detail"]


def test_a_cluster_with_a_monitoring_namespace_serves_the_gpu_alerts_and_the_scrape(client_as, demo_org) -> None:
    demo_org.cluster.monitoring_namespace = "gpu-operator"
    demo_org.cluster.full_clean()
    demo_org.cluster.save()
    objects = client_as("approver").get(URL).json()
    assert [(o["kind"], o["metadata"]["namespace"]) for o in objects[-2:]] == [
        ("PrometheusRule", "gpu-operator"),
        ("ServiceMonitor", "gpu-operator"),
    ]
    for obj in objects[-2:]:
        validate_kueue(obj)


def test_the_clusters_operator_settings_reach_its_objects(client_as, demo_org) -> None:
    # A default kube-prometheus-stack selects rules and monitors by its release label; OpenShift runs the GPU
    # Operator in nvidia-gpu-operator.
    cluster = demo_org.cluster
    cluster.monitoring_namespace = "monitoring"
    cluster.monitoring_labels = {"release": "kube-prometheus-stack"}
    cluster.gpu_operator_namespace = "nvidia-gpu-operator"
    cluster.full_clean()
    cluster.save()
    objects = client_as("approver").get(URL).json()
    for obj in objects[-2:]:
        validate_kueue(obj)
        assert obj["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    config_maps = [o for o in objects if o["kind"] == "ConfigMap"]
    assert config_maps and {o["metadata"]["namespace"] for o in config_maps} == {"nvidia-gpu-operator"}


def test_bad_operator_settings_are_refused_naming_the_field(demo_org) -> None:
    from django.core.exceptions import ValidationError

    cluster = demo_org.cluster
    for field, value in (("monitoring_labels", {"release": "not a label value!"}), ("egress_tcp_ports", [443, 0])):
        setattr(cluster, field, value)
        with pytest.raises(ValidationError) as excinfo:
            cluster.full_clean()
        assert field in excinfo.value.message_dict
        cluster.refresh_from_db()
