"""Browser journeys: finance from its home to a report line's request, read only; and a form sent again with Back
then Submit, warned instead of making the same request twice."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

from allocations.models import GpuRequest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]


def test_finance_goes_from_home_to_a_report_lines_request_read_only(new_page) -> None:
    call_command("seed_demo", "--force", verbosity=0)  # again, with its history: three closed months
    page = new_page("finance")
    page.goto("/")
    page.click("header a:has-text('Reports')")
    page.wait_for_url(re.compile(r"/billing/reports/"))

    page.locator("#report-table a").first.click()  # the newest closed month of a team
    page.wait_for_url(re.compile(r"/billing/reports/[-\w]+/\d{4}-\d{1,2}/$"))
    line = page.locator("#report-lines a[href^='/requests/']").first
    request_id = int(line.inner_text().lstrip("#"))
    line.click()

    page.wait_for_url(re.compile(rf"/requests/{request_id}/$"))
    assert GpuRequest.objects.get(pk=request_id).name in page.locator("h1").inner_text()
    # Finance reads the request; nothing on it acts for them.
    for action in ("Approve", "Reject", "Cancel", "Release", "Extend"):
        assert page.locator(f"main button:has-text('{action}')").count() == 0, action


def test_back_then_submit_is_warned_and_makes_no_second_request(new_page) -> None:
    alice = new_page("alice")
    alice.goto("/requests/new/")
    alice.fill("#id_name", "e2e-twice")
    alice.fill("#id_purpose", "Sent twice by Back then Submit.")
    alice.select_option("#id_workload_type", "batch_inference")
    alice.fill("#id_gpu_memory_gb", "16")
    alice.select_option("#id_sla_tier", "tier2_batch")
    alice.fill("#id_duration_hours", "12")
    alice.fill("#id_command", "python score.py")
    alice.locator("#preview .rec-resource").wait_for()
    alice.click("button:has-text('Submit for approval')")
    alice.wait_for_url(re.compile(r"/requests/\d+/$"))
    first = GpuRequest.objects.get(name="e2e-twice")

    alice.go_back()
    alice.wait_for_url(re.compile(r"/requests/new/"))
    if alice.input_value("#id_name") != "e2e-twice":  # a browser that did not keep the form: fill the name again
        alice.fill("#id_name", "e2e-twice")
        alice.fill("#id_command", "python score.py")
    alice.click("button:has-text('Submit for approval')")
    alice.wait_for_load_state()

    assert f"#{first.pk}" in alice.locator("#request-form").inner_text()
    assert "already has an open request named" in alice.locator("#request-form").inner_text()
    assert GpuRequest.objects.filter(name="e2e-twice").count() == 1
