"""The browser journey after approval: the detail page shows the manifests' YAML, copies it, and refreshes status."""

from __future__ import annotations

import re

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

PENDING = "Pending: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."


def _submit_as_alice(name: str):
    from django.contrib.auth.models import User

    from allocations.models import Team
    from allocations.requests.services import gpu_request_submit

    return gpu_request_submit(
        command=["python", "main.py"],
        acting_user=User.objects.get(username="alice"),
        team=Team.objects.get(slug="vision"),
        name=name,
        profile_data={"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch"},
    )


def test_approval_shows_the_manifests_yaml_and_copies_it(new_page) -> None:
    request = _submit_as_alice("e2e-manifests")
    alice = new_page("alice")
    alice.goto(f"/requests/{request.pk}/")
    assert "rendered once the request is approved" in alice.locator("#manifests").inner_text()
    assert alice.locator("#copy-manifests").is_hidden()

    carol = new_page("carol")
    carol.goto(f"/requests/{request.pk}/")
    carol.locator("#review-comment").fill("Go.")
    carol.click("button[value=approve]")
    carol.wait_for_url(re.compile(rf"/requests/{request.pk}/$"))
    # Tasks run in-process and the demo cluster is a GitOps tree: approved -> provisioning -> active at once.
    assert "Active" in carol.locator("h1 .status").inner_text()

    alice.goto(f"/requests/{request.pk}/")
    yaml_text = alice.locator("#manifests-yaml").inner_text()
    assert yaml_text.startswith("---")
    assert "kind: Job" in yaml_text and f"name: gpr-{request.pk}" in yaml_text
    assert "namespace: team-vision" in yaml_text
    assert "Unobservable" in alice.locator("#live-status").inner_text()
    download = alice.locator("#manifest-tools a[download]")
    assert download.get_attribute("download") == f"gpr-{request.pk}.yaml"

    copy = alice.locator("#copy-manifests")
    assert copy.is_visible()
    alice.context.grant_permissions(["clipboard-read", "clipboard-write"])
    copy.click()
    alice.locator("#copy-state", has_text="Copied").wait_for()
    assert alice.evaluate("navigator.clipboard.readText()") == alice.evaluate(
        "document.getElementById('manifests-yaml').textContent"
    )
    alice.screenshot(path="/tmp/e2e-manifests.png", full_page=True)


def test_refresh_status_shows_the_fix_then_the_recovery_without_a_reload(new_page) -> None:
    from django.utils import timezone

    from allocations.models import GpuRequest, RequestStatus

    request = _submit_as_alice("e2e-pending")
    GpuRequest.objects.filter(pk=request.pk).update(
        status=RequestStatus.ACTIVE, observed_phase="Pending", observed_at=timezone.now(), status_detail=PENDING
    )
    alice = new_page("alice")
    alice.goto(f"/requests/{request.pk}/")
    alice.evaluate("window.__noReload = true")
    hint = alice.locator("[data-hint=pool-full]")
    assert "The pool is full" in hint.inner_text()
    assert "Release one of your team" in hint.inner_text()
    assert "Refreshing every 10 s" in alice.locator("#live-state").inner_text()

    GpuRequest.objects.filter(pk=request.pk).update(
        observed_phase="Running", observed_at=timezone.now(), status_detail="Running."
    )
    alice.click("#refresh-status")
    alice.locator("#live-status .phase-running").wait_for()
    assert hint.count() == 0
    assert "checked" in alice.locator("#live-state").inner_text()
    assert alice.evaluate("window.__noReload") is True


def test_platform_admin_reads_the_cluster_page(new_page) -> None:
    carol = new_page("carol")
    carol.click("nav >> text=Clusters")
    carol.wait_for_url(re.compile(r"/clusters/$"))
    carol.click("#cluster-demo a")
    carol.wait_for_url(re.compile(r"/clusters/demo/$"))
    for pool in ("a100-mig", "h100-dedicated", "t4-shared"):
        assert carol.locator(f"#pool-{pool}").is_visible()
    assert "nvidia.com/mig-3g.20gb" in carol.locator("#pool-a100-mig").inner_text()
    configs = carol.locator(".operator-config").all_inner_texts()
    assert "gpu-portal-device-plugin-config" in configs[0] and "gpu-portal-mig-parted-config" in configs[1]
    carol.screenshot(path="/tmp/e2e-cluster.png", full_page=True)

    alice = new_page("alice")
    assert alice.locator("nav >> text=Clusters").count() == 0
    assert alice.goto("/clusters/demo/").status == 403
