"""The hardware-vs-software tree in Chromium: request and cluster pages at 1440 and 390 px, nothing wider than the
screen; screenshots under /tmp (e2e-triage-*.png)."""

from __future__ import annotations

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

WIDTHS = (1440, 390)


def _seed_faults() -> tuple[int, str]:
    """alice's running training saw XID 79 and XID 13 on its GPUs, one ran hot, another node runs a newer driver."""
    from django.utils import timezone

    from allocations.models import GpuRequest
    from billing.models import GpuHealthHour
    from tests.billing.rollups import hours_back, rollup

    request = GpuRequest.objects.get(name="resnet50-training")
    cluster = request.cluster or request.node_pool.cluster
    hours = hours_back(timezone.now(), 3)
    for index, uuid in enumerate(
        ("GPU-00000000-0000-0000-0000-00000000a001", "GPU-00000000-0000-0000-0000-00000000a002")
    ):
        for hour in hours:
            rollup(
                cluster=cluster,
                hour=hour,
                team=request.team,
                request=request,
                gpu_uuid=uuid,
                gpu_index=index,
                max_temperature_c=89.0 if index == 1 else 71.0,
            )
            codes = {0: [13, 79], 1: [13]}[index] if hour == hours[1] else []
            GpuHealthHour.objects.create(
                cluster=cluster,
                hour=hour,
                gpu_uuid=uuid,
                hostname="gpu-node-1",
                gpu_index=index,
                gpu_model_name="NVIDIA H100 80GB HBM3",
                driver_version="535.129.03",
                reported_minutes=60,
                xid_codes=codes,
                last_xid=codes[-1] if codes else None,
                xid_events=len(codes),
                xid_minutes=len(codes),
                pulled_at=timezone.now(),
            )
    GpuHealthHour.objects.create(
        cluster=cluster,
        hour=hours[-1],
        gpu_uuid="GPU-00000000-0000-0000-0000-00000000b001",
        hostname="gpu-node-7",
        gpu_index=0,
        driver_version="550.54.15",
        reported_minutes=60,
        pulled_at=timezone.now(),
    )
    GpuRequest.objects.filter(pk=request.pk).update(
        status_detail="Back-off restarting failed container\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    return request.pk, cluster.name


def _check(page, url: str, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        tree = page.locator("#gpu-troubleshooting")
        tree.wait_for()
        assert page.locator("#triage-xid[data-verdict=hardware] li[data-xid='79']").count() == 1
        assert page.locator("#triage-driver").count() == 1
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, f"{name} is {overflow}px wider than a {width}px screen"
        page.screenshot(path=f"/tmp/e2e-triage-{name}-{width}.png", full_page=True)
        tree.screenshot(path=f"/tmp/e2e-triage-{name}-{width}-tree.png")


def test_the_tree_on_the_request_and_cluster_pages_fits_wide_and_narrow_screens(new_page) -> None:
    request_id, cluster = _seed_faults()
    page = new_page("alice")
    _check(page, f"/requests/{request_id}/", "request")
    assert page.locator("#triage-temperature").count() == 1 and page.locator("#triage-cuda").count() == 1
    admin = new_page("carol")
    _check(admin, f"/clusters/{cluster}/", "cluster")


def test_the_approval_queue_marks_a_borrowing_tier3_request_as_fitting(new_page) -> None:
    from django.utils import timezone

    from allocations.models import GpuRequest, NodePool, Quota, SlaTier, Team
    from tests.factories import GpuRequestFactory, dedicated_spec

    vision, pool = Team.objects.get(slug="vision"), NodePool.objects.get(name="h100-dedicated")
    # Vision holds 2 H100s of a nominal 3 and may borrow 4 more from nlp's unused H100s.
    Quota.objects.filter(team=vision, node_pool=pool).update(limit=3, borrowing_limit=4)
    asks = {"tier3_development": ("dev-borrow", 3), "tier2_batch": ("train-over", 2)}
    ids = {}
    for tier, (name, units) in asks.items():
        ids[tier] = GpuRequestFactory(
            team=vision,
            requester=GpuRequest.objects.get(name="resnet50-training").requester,
            name=name,
            sla_tier=SlaTier.objects.get(slug=tier),
            node_pool=pool,
            cluster=pool.cluster,
            resource_units=units,
            gpu_count=units,
            spec=dedicated_spec(quantity=units),
            submitted_at=timezone.now(),
        ).pk
    page = new_page("carol")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto("/approvals/")
        borrowing = page.locator(f"#pending-{ids['tier3_development']}")
        assert borrowing.get_attribute("data-fits") == "borrowed"
        assert "Borrows 2" in borrowing.inner_text()  # 2 held + 3 asked, nominal 3
        refused = page.locator(f"#pending-{ids['tier2_batch']}")
        assert refused.get_attribute("data-fits") == "no"
        assert "Only tier 3 may borrow (up to 4 more)." in refused.inner_text()
        page.screenshot(path=f"/tmp/e2e-queue-borrowing-{width}.png", full_page=True)
        # At 390 px the queue's table scrolls sideways: the headroom cells themselves, scrolled into view.
        for tier, row in (("tier3", borrowing), ("tier2", refused)):
            row.locator("td.headroom").screenshot(path=f"/tmp/e2e-queue-headroom-{tier}-{width}.png")
