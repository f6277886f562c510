"""Browser journeys: a template chosen and submitted; a lead asking for more quota that an approver grants; a draft
restored after the session expired and the user signed in again. Each page is captured at 1440 and 390 px wide
(``E2E_SHOTS``: where the screenshots go)."""

from __future__ import annotations

import os
import re

import pytest

from allocations.models import GpuRequest, Quota, QuotaIncreaseRequest, QuotaRequestStatus, RequestTemplate

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SHOTS = os.environ.get("E2E_SHOTS", "/tmp")


def shoot(page, name: str) -> None:
    """Capture the page at 1440 and 390 px wide; nothing may scroll sideways at 390."""
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 1000})
        page.screenshot(path=f"{SHOTS}/{name}-{width}.png", full_page=True)
        if width == 390:
            assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0, name
    page.set_viewport_size({"width": 1400, "height": 1000})


def test_a_template_is_chosen_and_submitted(new_page) -> None:
    template = RequestTemplate.objects.get(name="Jupyter notebook, T4 share, 8 h")
    page = new_page("alice")
    page.goto("/requests/new/")

    page.select_option("#id_template", str(template.pk))  # the picker submits itself on change
    page.wait_for_url(re.compile(rf"/requests/new/\?template={template.pk}$"))
    assert page.input_value("#id_workload_type") == "development"
    assert page.input_value("#id_gpu_model") == "T4"
    assert page.input_value("#id_duration_hours") == "8"
    page.locator("#preview .rec-resource").wait_for()
    shoot(page, "request-form-template")

    page.fill("#id_name", "notebook-from-template")
    page.click("button:has-text('Submit for approval')")
    page.wait_for_url(re.compile(r"/requests/\d+/$"))
    made = GpuRequest.objects.get(name="notebook-from-template")
    assert made.workload_type == "development" and made.gpu_model_requested == "T4"
    assert made.image == template.image


def test_a_lead_asks_for_more_quota_and_an_approver_grants_it(new_page) -> None:
    quota = Quota.objects.get(team__slug="vision", node_pool__name="h100-dedicated")
    dave = new_page("dave")
    dave.goto("/quotas/?team=vision")
    shoot(dave, "quotas-lead")
    dave.click(f"#quota-{quota.pk} a:has-text('Ask for more')")
    dave.wait_for_url(re.compile(rf"/quotas/{quota.pk}/increase/$"))
    assert "USD" in dave.locator("#unit-price").inner_text()
    dave.fill("#id_requested_limit", str(quota.limit + 4))
    dave.fill("#id_reason", "Four more H100s for the detector's retraining this month.")
    shoot(dave, "quota-increase-form")
    dave.click("button:has-text('Ask an approver')")
    dave.wait_for_url(re.compile(r"/quotas/\?team=vision$"))
    increase = QuotaIncreaseRequest.objects.get(quota=quota)
    assert f"asked {quota.limit + 4}" in dave.locator(f"#quota-{quota.pk}").inner_text()

    carol = new_page("carol")
    carol.goto("/quotas/")
    row = carol.locator(f"#increase-{increase.pk}")
    assert "USD" in row.inner_text() and "Four more H100s" in row.inner_text()
    shoot(carol, "quotas-approver")
    row.locator("textarea").fill("Granted for the retraining.")
    row.locator("button:has-text('Grant')").click()
    carol.locator("dialog#confirm-dialog").wait_for(state="visible")
    carol.locator("#confirm-ok").click()
    carol.locator(".messages").wait_for()
    assert "granted" in carol.locator(".messages").inner_text()
    quota.refresh_from_db()
    increase.refresh_from_db()
    assert quota.limit == increase.requested_limit and increase.status == QuotaRequestStatus.GRANTED


def test_a_draft_is_restored_after_signing_in_again(new_page, demo) -> None:
    page = new_page("alice")
    page.goto("/requests/new/")
    page.fill("#id_name", "draft-survives")
    page.fill("#id_purpose", "Typed before the session expired.")
    page.select_option("#id_workload_type", "batch_inference")
    page.fill("#id_gpu_memory_gb", "16")
    page.fill("#id_duration_hours", "6")
    page.fill("#id_command", "python infer.py")
    page.context.clear_cookies(name="sessionid")  # the session expired while the form was open

    page.click("button:has-text('Submit for approval')")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", "alice")
    page.fill("#id_password", "demo")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/requests/new/$"))

    page.locator("#draft-restored").wait_for()
    assert page.input_value("#id_name") == "draft-survives"
    assert page.input_value("#id_purpose") == "Typed before the session expired."
    assert page.input_value("#id_workload_type") == "batch_inference"
    assert page.input_value("#id_gpu_memory_gb") == "16"
    page.locator("#preview .rec-resource").wait_for()  # the restored profile is previewed
    shoot(page, "request-form-draft-restored")
    page.click("button:has-text('Submit for approval')")
    page.wait_for_url(re.compile(r"/requests/\d+/$"))
    assert GpuRequest.objects.filter(name="draft-survives").count() == 1

    page.goto("/requests/new/")  # submitted: the draft is gone
    assert page.input_value("#id_name") == ""
    assert page.locator("#draft-restored").count() == 0


def test_a_quota_refusal_offers_the_next_steps(new_page) -> None:
    page = new_page("alice")
    page.goto("/requests/new/")
    page.fill("#id_name", "too-big")
    page.select_option("#id_workload_type", "training")
    page.fill("#id_gpu_memory_gb", "480")
    page.fill("#id_gpu_count", "8")
    page.fill("#id_replicas", "2")
    page.fill("#id_command", "torchrun train.py")
    page.click("button:has-text('Submit for approval')")
    page.locator("#quota-next-steps").wait_for()
    assert "Ask for a quota increase" in page.locator("#quota-next-steps").inner_text()
    shoot(page, "request-form-quota-refusal")


def test_pages_of_a_lead_and_the_team(new_page) -> None:
    page = new_page("dave")
    page.goto("/")
    page.locator("#lead-home-vision").wait_for()
    shoot(page, "home-lead")
    page.goto("/teams/vision/")
    page.fill("#member-username", "bo")
    page.locator("#member-candidates option").first.wait_for(state="attached")
    assert page.locator("#member-candidates option").first.get_attribute("value") == "bob"
    shoot(page, "team-page-lead")
    first = GpuRequest.objects.filter(team__slug="vision").order_by("-id").first()
    page.goto(f"/requests/{first.pk}/")
    assert page.locator("#clone-request").count() == 1
    page.click("#save-template summary")
    page.fill("#template-name", "From the e2e test")
    shoot(page, "request-detail-save-template")
    page.click("#save-template button[type=submit]")
    page.wait_for_url(re.compile(r"/templates/$"))
    assert "From the e2e test" in page.locator("#template-list").inner_text()
    shoot(page, "template-list")
