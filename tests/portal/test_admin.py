"""The admin is usable by a platform admin: every changelist and add page loads, and secrets never render back."""

import pytest
from django.contrib import admin
from django.urls import reverse

from tests.factories import ClusterFactory, GpuRequestFactory, NodePoolFactory, UserFactory

pytestmark = pytest.mark.django_db

REGISTERED = sorted((model._meta.app_label, model._meta.model_name) for model in admin.site._registry)


@pytest.fixture
def admin_client(client):
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


@pytest.mark.parametrize(("app_label", "model_name"), REGISTERED)
def test_changelist_loads(admin_client, app_label: str, model_name: str) -> None:
    GpuRequestFactory()
    NodePoolFactory()
    response = admin_client.get(reverse(f"admin:{app_label}_{model_name}_changelist"))
    assert response.status_code == 200


@pytest.mark.parametrize(("app_label", "model_name"), REGISTERED)
def test_add_page_loads_or_is_forbidden_by_design(admin_client, app_label: str, model_name: str) -> None:
    model_admin = admin.site._registry[next(m for m in admin.site._registry if m._meta.model_name == model_name)]
    response = admin_client.get(reverse(f"admin:{app_label}_{model_name}_add"))
    expected = 200 if model_admin.has_add_permission(response.wsgi_request) else 403
    assert response.status_code == expected


def test_changelist_search_and_filters_work(admin_client) -> None:
    GpuRequestFactory(name="needle-request")
    GpuRequestFactory(name="haystack")
    url = reverse("admin:allocations_gpurequest_changelist")
    response = admin_client.get(url, {"q": "needle", "status__exact": "pending_approval"})
    assert response.status_code == 200
    assert b"needle-request" in response.content
    assert b"haystack" not in response.content


def test_cluster_secret_reference_is_never_rendered_back(admin_client) -> None:
    cluster = ClusterFactory(backend="kubernetes", kubeconfig_secret_ref="env:SUPER_SECRET_KUBECONFIG_VAR")
    url = reverse("admin:allocations_cluster_change", args=[cluster.pk])
    response = admin_client.get(url)
    assert response.status_code == 200
    assert b"SUPER_SECRET_KUBECONFIG_VAR" not in response.content
    assert b"A value is stored" in response.content


def test_saving_a_cluster_with_an_empty_secret_box_keeps_the_reference(admin_client) -> None:
    cluster = ClusterFactory(backend="kubernetes", kubeconfig_secret_ref="env:KEEP_ME")
    url = reverse("admin:allocations_cluster_change", args=[cluster.pk])
    data = {
        "name": cluster.name,
        "description": "edited",
        "backend": "kubernetes",
        "api_endpoint": "",
        "kubeconfig_secret_ref": "",
        "gitops_path": "",
        "prometheus_url": "",
        "prometheus_auth_secret_ref": "",
        "scheduler": "default",
        "device_api": "device-plugin",
        # The operator settings as the form shows them (their defaults).
        "monitoring_labels": "{}",
        "gpu_operator_namespace": "gpu-operator",
        "egress_tcp_ports": "[443]",
        "is_active": "on",
        "node_pools-TOTAL_FORMS": "0",
        "node_pools-INITIAL_FORMS": "0",
        "node_pools-MIN_NUM_FORMS": "0",
        "node_pools-MAX_NUM_FORMS": "1000",
    }
    response = admin_client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]
    cluster.refresh_from_db()
    assert cluster.description == "edited"
    assert cluster.kubeconfig_secret_ref == "env:KEEP_ME"


def test_request_events_are_read_only_in_admin(admin_client) -> None:
    response = admin_client.get(reverse("admin:allocations_requestevent_add"))
    assert response.status_code == 403
