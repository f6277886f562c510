"""Safe actions and quick repeats in Chromium: release and the bulk review ask first in a <dialog> naming what they
act on (static/js/confirm.js, under the CSP), a released request clones into a pre-filled form, and the request
page's "Use it" card fits a 390 px screen. Screenshots at 1440 and 390 px under /tmp."""

from __future__ import annotations

import re

import pytest

from allocations.models import GpuRequest, RequestStatus

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]


def seeded(name: str) -> GpuRequest:
    return GpuRequest.objects.get(name=name)


def test_release_asks_first_naming_the_request(new_page) -> None:
    training = seeded("resnet50-training")
    assert training.status == RequestStatus.ACTIVE
    page = new_page("alice")
    page.goto(f"/requests/{training.pk}/")
    assert page.locator("#access").is_visible()
    assert "kubectl -n team-vision get pods -l gpu-portal/request=" in page.locator("#kubectl-commands").inner_text()
    page.screenshot(path="/tmp/h13b-request-active-1440.png", full_page=True)

    page.click("button:has-text('Release GPUs')")
    dialog = page.locator("dialog#confirm-dialog")
    dialog.wait_for(state="visible")
    assert f"#{training.pk} “resnet50-training”" in dialog.locator("h2").inner_text()
    page.screenshot(path="/tmp/h13b-release-dialog-1440.png")
    dialog.locator("#confirm-cancel").click()
    dialog.wait_for(state="hidden")
    training.refresh_from_db()
    assert training.status == RequestStatus.ACTIVE  # going back sent nothing

    page.click("button:has-text('Release GPUs')")
    dialog.locator("#confirm-ok").click()
    page.wait_for_url(re.compile(rf"/requests/{training.pk}/$"))
    page.locator(".messages").wait_for()
    assert "was released" in page.locator(".messages").inner_text()
    training.refresh_from_db()
    assert training.status == RequestStatus.RELEASED


def test_bulk_approve_lists_the_ticked_requests_before_it_acts(new_page) -> None:
    pending = list(GpuRequest.objects.filter(status=RequestStatus.PENDING_APPROVAL).order_by("pk"))
    assert len(pending) >= 2
    page = new_page("carol")
    page.goto("/approvals/")

    page.click("button:has-text('Reject ticked')")
    dialog = page.locator("dialog#confirm-dialog")
    dialog.wait_for(state="visible")
    assert "Tick at least one" in dialog.inner_text() and not dialog.locator("#confirm-ok").is_visible()
    dialog.locator("#confirm-cancel").click()

    for request in pending[:2]:
        page.check(f"#pending-{request.pk} input[name=ids]")
    page.click("button:has-text('Approve ticked')")
    dialog.wait_for(state="visible")
    assert dialog.locator("h2").inner_text() == "Approve 2 requests?"
    items = dialog.locator("#confirm-items li").all_inner_texts()
    assert [item.split(" (")[0] for item in items] == [f"#{r.pk} {r.name}" for r in pending[:2]]
    page.screenshot(path="/tmp/h13b-bulk-dialog-1440.png")
    dialog.locator("#confirm-ok").click()
    page.locator(".messages").wait_for()
    assert "Approved 2 requests" in page.locator(".messages").inner_text()
    assert (
        GpuRequest.objects.filter(pk__in=[r.pk for r in pending[:2]], status=RequestStatus.PENDING_APPROVAL).count()
        == 0
    )


def test_a_released_request_clones_into_a_pre_filled_form(new_page) -> None:
    released = GpuRequest.objects.filter(status=RequestStatus.RELEASED, requester__username="alice").first()
    assert released is not None
    page = new_page("alice")
    page.goto(f"/requests/{released.pk}/")
    page.click("#clone-request")
    page.wait_for_url(re.compile(r"/requests/new/\?from=\d+$"))
    assert page.input_value("#id_name") == f"{released.name} (copy)"
    assert page.input_value("#id_workload_type") == released.workload_type
    page.locator("#preview .rec-resource").wait_for()
    page.click("button:has-text('Submit for approval')")
    page.wait_for_url(re.compile(r"/requests/\d+/$"))
    assert "Pending approval" in page.locator("h1 .status").inner_text()
    assert GpuRequest.objects.filter(name=f"{released.name} (copy)", status=RequestStatus.PENDING_APPROVAL).exists()


def test_the_use_it_card_and_the_dialog_fit_a_narrow_screen(new_page) -> None:
    training = seeded("resnet50-training")
    page = new_page("alice")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/requests/{training.pk}/")
    page.locator("#access").wait_for()
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    page.screenshot(path="/tmp/h13b-request-active-390.png", full_page=True)
    page.click("button:has-text('Release GPUs')")
    page.locator("dialog#confirm-dialog").wait_for(state="visible")
    box = page.locator("dialog#confirm-dialog").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    page.screenshot(path="/tmp/h13b-release-dialog-390.png")
