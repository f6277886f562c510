"""The browser journey: the live recommendation preview, then submit -> approve -> seen approved."""

from __future__ import annotations

import re

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOT = "/tmp/e2e-preview.png"


def test_preview_updates_live_as_the_profile_changes(new_page) -> None:
    page = new_page("alice")
    page.goto("/requests/new/")
    page.evaluate("window.__noReload = true")
    page.select_option("#id_workload_type", "realtime_inference")
    page.fill("#id_gpu_memory_gb", "8")
    resource = page.locator("#preview .rec-resource")
    resource.filter(has_text="nvidia.com/mig-2g.10gb").wait_for()
    preview = page.locator("#preview")
    assert "MIG slice" in preview.inner_text()
    assert "A100-40GB" in preview.inner_text()
    assert page.locator("#preview ol.rationale li").count() >= 1
    assert page.locator("#preview table.alternatives tbody tr").count() >= 2
    page.fill("#id_name", "detector-v2")
    page.screenshot(path=SCREENSHOT, full_page=True)

    page.fill("#id_gpu_memory_gb", "24")
    page.locator("#preview .strategy", has_text="Dedicated GPU").wait_for()
    assert resource.inner_text() == "nvidia.com/gpu"
    # Still the same document: the preview changed without a reload.
    assert page.evaluate("window.__noReload") is True


def test_preview_shows_field_errors_inline(new_page) -> None:
    page = new_page("alice")
    page.goto("/requests/new/")
    page.fill("#id_gpu_memory_gb", "8")
    page.locator("#preview .rec-resource").wait_for()
    page.select_option("#id_gpu_model", "A30")
    page.locator("#preview .preview-errors").wait_for()
    assert "GPU model" in page.locator("#preview .preview-errors").inner_text()
    assert page.locator(".field[data-field=gpu_model].api-error").count() == 1


def test_submit_approve_and_see_it_approved(new_page) -> None:
    alice = new_page("alice")
    alice.goto("/requests/new/")
    alice.fill("#id_name", "e2e-segmenter")
    alice.fill("#id_purpose", "Segmentation inference for the e2e test.")
    alice.select_option("#id_workload_type", "batch_inference")
    alice.fill("#id_gpu_memory_gb", "16")
    alice.select_option("#id_sla_tier", "tier2_batch")
    alice.fill("#id_duration_hours", "12")
    alice.fill("#id_command", "python segment.py --input s3://scans/today")
    alice.locator("#preview .rec-resource").wait_for()
    alice.click("button:has-text('Submit for approval')")
    alice.wait_for_url(re.compile(r"/requests/\d+/$"))
    request_url = alice.url
    pk = re.search(r"/requests/(\d+)/$", request_url).group(1)
    assert "Pending approval" in alice.locator("h1 .status").inner_text()
    assert "was submitted" in alice.locator(".messages").inner_text()

    carol = new_page("carol")
    carol.goto("/approvals/")
    carol.screenshot(path="/tmp/e2e-approvals.png", full_page=True)
    row = carol.locator(f"#pending-{pk}")
    assert "e2e-segmenter" in row.inner_text()
    row.locator("input[name=comment]").fill("Fits the quota, go.")
    row.locator("button[value=approve]").click()
    carol.wait_for_load_state()
    assert "was approved" in carol.locator(".messages").inner_text()
    assert carol.locator(f"#pending-{pk}").count() == 0

    alice.goto(request_url)
    # Approval hands over to provisioning; tasks run in-process here and the demo cluster is a GitOps tree, so the
    # request is applied at once: approved, then provisioning, then active, all on the timeline.
    assert "Active" in alice.locator("h1 .status").inner_text()
    timeline = alice.locator(".timeline").inner_text()
    assert "Fits the quota, go." in timeline
    assert "Approved" in timeline
    alice.screenshot(path="/tmp/e2e-detail.png", full_page=True)
