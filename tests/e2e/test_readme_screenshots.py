"""The README's pictures, taken from the demo in headless Chromium at 1440 px, each with the checks that make it
worth showing: the home page of each role (member, lead, approver and admin, finance), the cost dashboards with
names, not slugs, in their controls and legends, and a running request's page with its pods and events (from the
API-server emulator).

Every run writes them to var/screenshots/readme/; ``make readme-screenshots`` (README_SCREENSHOTS=1) also writes
them, reduced to 128 colours, where the README shows them (``README_PICTURES``), so regenerating them is one command.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tests.e2e.test_dashboards import _october_usage
from tests.e2e.test_layout_every_page import _demo_with_wide_parts
from tests.e2e.test_request_use_it import _event, _pod

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "var" / "screenshots" / "readme"
# Picture -> where the README shows it.
README_PICTURES = {
    "home-member.png": "docs/home-member.png",
    "home-lead.png": "docs/home-lead.png",
    "home-approver.png": "docs/home-approver.png",
    "home-finance.png": "docs/screenshots/home-finance.png",
    "dashboards.png": "docs/dashboards.png",
    "request-active.png": "docs/screenshots/request-active.png",
    "request-use-it.png": "docs/screenshots/request-use-it.png",
}
HOMES = {
    "alice": "home-member.png",
    "dave": "home-lead.png",
    "carol": "home-approver.png",
    "finance": "home-finance.png",
}
# Distinct rows the main navigation's links sit on.
NAV_ROWS = "new Set([...document.querySelectorAll('nav.mainnav a')].map(a => a.getBoundingClientRect().top)).size"


def _save(png: bytes, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_bytes(png)
    if os.environ.get("README_SCREENSHOTS") == "1":
        from PIL import Image

        with Image.open(io.BytesIO(png)) as image:
            image.convert("RGB").quantize(colors=128).save(ROOT / README_PICTURES[name], optimize=True)


def _as_deployed(settings) -> None:
    """A deployed portal has a task broker: no 'runs in-process' banner across the pictures (the data is made)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False


def _fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    assert page.evaluate(NAV_ROWS) == 1


def test_the_readme_shows_every_picture_it_names() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for picture in README_PICTURES.values():
        assert f"({picture})" in readme, picture
        assert (ROOT / picture).is_file(), picture


def test_home_of_each_role(new_page, settings) -> None:
    _demo_with_wide_parts()
    _as_deployed(settings)
    for username, picture in HOMES.items():
        page = new_page(username)
        page.set_viewport_size({"width": 1440, "height": 900})
        page.goto("/")
        page.wait_for_load_state("networkidle")
        assert page.locator("text=You are not in a team yet").count() == 0
        _fits(page)
        if username == "finance":  # one card: the picture stops under it
            _save(page.screenshot(clip={"x": 0, "y": 0, "width": 1440, "height": 500}), picture)
        else:
            _save(page.screenshot(full_page=True), picture)


def test_dashboards(new_page, settings) -> None:
    from decimal import Decimal

    from allocations.models import Team
    from billing.models import TeamBudget

    _october_usage()
    TeamBudget.objects.update_or_create(
        team=Team.objects.get(slug="vision"), defaults={"monthly_amount": Decimal("30000")}
    )
    _as_deployed(settings)
    page = new_page("carol")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto("/billing/dashboards/?period=month&month=2026-10&group=team&idle=1")
    for chart in ("cost-over-time", "allocation-vs-utilization", "pool-heatmap", "cost-per-request"):
        page.wait_for_selector(f"#chart-{chart} .main-svg")
    _fits(page)
    legend = " ".join(page.locator("#chart-cost-over-time .legendtext").all_text_contents())
    assert "Computer Vision" in legend and "Natural Language" in legend and "Idle capacity" in legend, legend
    assert "Computer Vision" in page.inner_text("#id_filter_team")
    assert "Computer Vision · resnet-sweep" in page.inner_text("#chart-cost-per-request")
    # Controls, totals and the cost charts down to cost per request; the capacity forecast has its own section.
    bottom = page.evaluate("document.querySelector('#panel-cost-per-request').getBoundingClientRect().bottom + 16")
    _save(page.screenshot(full_page=True, clip={"x": 0, "y": 0, "width": 1440, "height": bottom}), "dashboards.png")


def test_request_page(new_page, settings) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from allocations.models import Cluster, ClusterBackend, GpuRequest
    from tests.integration.k8s_emulator import EmulatedCluster

    _demo_with_wide_parts()
    _as_deployed(settings)
    training = GpuRequest.objects.get(name="resnet50-training")
    with EmulatedCluster.running() as cluster:
        Cluster.objects.filter(name="demo").update(backend=ClusterBackend.KUBERNETES, api_endpoint=cluster.url)
        for index in (0, 1):
            cluster.put(_pod(f"gpr-{training.pk}-{index}-x7k2p", training.pk))
        events = [
            ("e1", f"gpr-{training.pk}", "SuccessfulCreate", f"Created pod: gpr-{training.pk}-0-x7k2p", "Job", 9),
            ("e2", f"gpr-{training.pk}-0-x7k2p", "Pulled", "Container image pulled in 41.2s", "Pod", 7),
            ("e3", f"gpr-{training.pk}-1-x7k2p", "Started", "Started container main", "Pod", 6),
        ]
        for name, about, reason, message, kind, minutes_ago in events:
            event = _event(name, about, reason, message, kind)
            event["lastTimestamp"] = f"{timezone.now() - timedelta(minutes=minutes_ago):%Y-%m-%dT%H:%M:%SZ}"
            cluster.put(event)
        # What the status sweep would have recorded from this cluster (the demo provisioned it on its GitOps tree).
        GpuRequest.objects.filter(pk=training.pk).update(
            observed_phase="Running", observed_at=timezone.now(), status_detail="2 of 2 pods running."
        )
        page = new_page("alice")
        page.set_viewport_size({"width": 1440, "height": 1300})
        page.goto(f"/requests/{training.pk}/")
        page.wait_for_load_state("networkidle")
        page.locator("#pods").wait_for()  # read by the page's script from the workload endpoint
        assert page.locator("#pods tbody tr").count() == 2 and page.locator("#k8s-events tbody tr").count() == 3
        _fits(page)
        _save(page.screenshot(), "request-active.png")  # the top of the page: status, where it runs, how to use it
        _save(page.locator("#access").screenshot(), "request-use-it.png")
