"""The pool's MIG page in Chromium: make a plan, see current vs proposed layouts and the picture, approve, apply.

The demo cluster is a GitOps tree and tasks run in-process, so "apply" writes the mig-parted ConfigMap and the nodes'
``nvidia.com/mig.config`` labels into the tree at once. Screenshots at 1440 and 390 px go to var/screenshots/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


def _demand() -> None:
    """The vision team wants two 4g.20gb and four 3g.20gb besides what the demo pool runs."""
    from allocations.models import NodePool, RequestStatus, Team
    from tests.factories import GpuRequestFactory

    pool = NodePool.objects.get(cluster__name="demo", name="a100-mig")
    for resource, units, status in [
        ("nvidia.com/mig-4g.20gb", 2, RequestStatus.APPROVED),
        ("nvidia.com/mig-3g.20gb", 4, RequestStatus.PENDING_APPROVAL),
        ("nvidia.com/mig-1g.5gb", 5, RequestStatus.ACTIVE),
    ]:
        GpuRequestFactory(
            team=Team.objects.get(slug="vision"),
            cluster=pool.cluster,
            node_pool=pool,
            status=status,
            resource_name=resource,
            resource_units=units,
        )


def test_a_platform_admin_plans_approves_and_applies_a_pools_layouts(new_page) -> None:
    from allocations.models import MigNodeLayout, MigPlan

    _demand()
    carol = new_page("carol")
    carol.goto("/clusters/demo/")
    carol.click("#pool-a100-mig a.mig-plans-link")
    carol.wait_for_url("**/clusters/demo/pools/a100-mig/mig/")
    # A GitOps tree's nodes cannot be read: the form asks for them, and says so when they are missing.
    carol.click("#make-plan")
    assert "Name the pool's nodes" in carol.locator("#new-plan").inner_text()
    carol.fill("#id_nodes", "a100-node-1\na100-node-2")
    carol.fill("#id_headroom_pct", "0")
    carol.click("#make-plan")
    carol.locator("#plan-status", has_text="Proposed").wait_for()

    plan = MigPlan.objects.latest("pk")  # the one just made; the demo seeds a proposed plan of its own
    summary = carol.locator("#plan-summary").inner_text()
    assert f"{plan.gpu_count}\nof {plan.pool_gpus}" in summary or f"{plan.gpu_count} of {plan.pool_gpus}" in summary
    assert plan.gpus_freed > 0 and carol.locator("#gpus-unused").inner_text() == f"{plan.gpus_freed} GPUs"
    # The plan releases nothing: no saving is counted, the unused GPUs' worth is said with what would make it one.
    effect = carol.locator("#cost-effect").inner_text()
    assert effect.startswith("None: the plan releases no GPU.") and "USD a month" in effect
    assert carol.locator("#plan-diff tbody tr").count() == plan.gpus_changed  # only the GPUs that change
    for node in plan.nodes_to_drain:
        assert node in carol.locator("#nodes-to-drain").inner_text()
    assert carol.locator("#plan-nodes tbody tr").count() == plan.pool_gpus
    assert carol.locator("#plan-nodes tr.changed").count() == plan.gpus_changed
    # The picture: plotly drew one bar trace per profile in the plan.
    carol.locator("#chart-mig-layouts .main-svg").first.wait_for()
    assert carol.locator("#chart-mig-layouts g.trace.bars").count() >= 3

    for width in (1440, 390):
        carol.set_viewport_size({"width": width, "height": 1000})
        carol.reload()  # plotly sizes the chart to the page it is drawn in
        carol.locator("#chart-mig-layouts .main-svg").first.wait_for()
        carol.screenshot(path=str(SCREENSHOTS / f"mig-pool-{width}.png"), full_page=True)
        # Nothing of this page's content reaches past the viewport (tables scroll inside their own box). The site
        # header's account menu is the shared layout's, not this page's.
        wide = carol.evaluate(
            "Array.from(document.querySelectorAll('main *')).filter(e => !e.closest('.table-scroll') && "
            "e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)"
            ".slice(0, 5).map(e => e.tagName + '.' + e.className + '#' + e.id)"
        )
        assert wide == [], f"content wider than {width}px: {wide}"
    carol.set_viewport_size({"width": 1440, "height": 1000})
    carol.reload()
    # The README's picture of a pool's layouts before and after (docs/mig-plan-layouts.png is a copy of it).
    carol.locator("#chart-mig-layouts .main-svg").first.wait_for()
    carol.locator("#plan").screenshot(path=str(SCREENSHOTS / "mig-plan-layouts.png"))

    carol.click("#approve-plan")
    carol.locator("#plan-status", has_text="Approved").wait_for()
    carol.click("#apply-plan")
    carol.locator("#plan-status", has_text="Applied").wait_for()
    assert set(MigNodeLayout.objects.values_list("node", flat=True)) == set(plan.nodes_to_drain)
    events = carol.locator("#plan-events").text_content()
    assert "written to the GitOps tree" in events

    # A team lead is no approver: no MIG page.
    dave = new_page("dave")
    assert dave.goto("/clusters/demo/pools/a100-mig/mig/").status == 403
