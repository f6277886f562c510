"""Narrow screens in Chromium: the navigation folds behind a Menu button at 390 px and stays open at 1440 px; the
error pages, sorting and the header search at both widths. Every page's layout at both widths is checked by
test_layout_every_page.py. Screenshots under var/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


def _sideways_overflow(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def test_navigation_folds_behind_a_menu_button_at_390px(new_page) -> None:
    page = new_page("carol")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/requests/")
    nav = page.get_by_role("navigation", name="Main")
    assert not nav.is_visible()
    toggle = page.get_by_role("button", name="Menu")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert nav.is_visible()
    assert page.get_by_role("link", name="Sign out").or_(page.get_by_role("button", name="Sign out")).is_visible()
    assert _sideways_overflow(page) <= 0
    page.screenshot(path=str(SCREENSHOTS / "narrow-menu-open-390.png"), full_page=True)
    page.get_by_role("link", name="Approvals").click()
    page.wait_for_url("**/approvals/")


def test_every_page_names_the_svg_favicon_and_it_is_served(new_page) -> None:
    page = new_page("alice")
    href = page.locator("link[rel=icon]").get_attribute("href")
    assert href and href.endswith(".svg")
    icon = page.request.get(href)
    assert icon.status == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in icon.body()


def test_the_403_and_404_pages_give_the_reason_and_a_way_back(new_page) -> None:
    page = new_page("alice")  # a member, not an approver
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        response = page.goto("/approvals/")
        assert response is not None and response.status == 403
        assert page.get_by_role("alert").inner_text() == "Only platform approvers can see the approval queue."
        assert _sideways_overflow(page) <= 0
        page.screenshot(path=str(SCREENSHOTS / f"error-403-{width}.png"), full_page=True)
        response = page.goto("/requests/987654/")
        assert response is not None and response.status == 404
        assert _sideways_overflow(page) <= 0
        page.screenshot(path=str(SCREENSHOTS / f"error-404-{width}.png"), full_page=True)
    page.get_by_role("link", name="Back to the overview").click()
    page.get_by_text("Hello, Alice").wait_for()


def test_the_400_page_names_the_input_it_could_not_read(new_page) -> None:
    page = new_page("alice")
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        response = page.goto("/billing/dashboards/?month=26-1")
        assert response is not None and response.status == 400
        # The message names the input; the page then shows the default month beside it.
        assert page.get_by_role("alert").inner_text().startswith("month: Use YYYY-MM, not '26-1'.")
        assert _sideways_overflow(page) <= 0
        page.screenshot(path=str(SCREENSHOTS / f"error-400-{width}.png"), full_page=True)


def test_request_list_headers_sort_on_the_server(new_page) -> None:
    page = new_page("alice")
    page.goto("/requests/")
    page.locator("thead").get_by_role("link", name="Name").click()
    page.wait_for_url("**/requests/?sort=name")
    names = page.locator("tbody tr td:nth-child(3)").all_inner_texts()
    assert names == sorted(names) and len(names) >= 3
    # The header's text is upper-cased by the stylesheet.
    assert page.locator("th[aria-sort=ascending]").inner_text().upper().startswith("NAME")
    page.locator("thead").get_by_role("link", name="Name").click()
    page.wait_for_url("**/requests/?sort=-name")
    assert page.locator("tbody tr td:nth-child(3)").all_inner_texts() == sorted(names, reverse=True)
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(SCREENSHOTS / f"requests-sorted-{width}.png"), full_page=True)


def test_the_header_search_finds_a_request_by_id_and_only_the_users_own(new_page) -> None:
    from allocations.models import GpuRequest

    theirs = GpuRequest.objects.filter(team__slug="nlp").first()
    ours = GpuRequest.objects.get(name="resnet50-training")
    page = new_page("alice")
    page.get_by_role("searchbox", name="Search requests, teams and clusters").fill(f"#{ours.pk}")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/search/?q=%23{ours.pk}")
    assert page.locator("#search-requests").get_by_role("link", name="resnet50-training").is_visible()
    page.screenshot(path=str(SCREENSHOTS / "search-1440.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.get_by_role("button", name="Menu").click()
    page.get_by_role("searchbox", name="Search requests, teams and clusters").fill(f"#{theirs.pk}")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/search/?q=%23{theirs.pk}")  # the new results, not the page already open
    assert page.locator("#search-requests").inner_text().endswith("No request matches.")
    assert _sideways_overflow(page) <= 0
    page.screenshot(path=str(SCREENSHOTS / "search-390.png"), full_page=True)


def _top(locator) -> float:
    box = locator.bounding_box()
    assert box is not None
    return box["y"]


def test_the_request_list_becomes_cards_led_by_status_at_390px(new_page) -> None:
    page = new_page("alice")
    page.goto("/requests/")
    first_row = page.locator("tbody tr").first
    # Wide: a table row, its cells side by side in the header's order.
    assert abs(_top(first_row.locator("td[data-label=Status]")) - _top(first_row.locator("td[data-label=Name]"))) < 4
    page.screenshot(path=str(SCREENSHOTS / "request-list-1440.png"), full_page=True)

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/requests/")
    first_row = page.locator("tbody tr").first
    status, name = first_row.locator("td[data-label=Status]"), first_row.locator("td[data-label=Name]")
    assert status.is_visible() and _top(status) < _top(name)
    assert page.locator("thead").bounding_box()["height"] <= 1  # the header is for screen readers only
    assert _sideways_overflow(page) <= 0
    page.screenshot(path=str(SCREENSHOTS / "request-list-390.png"), full_page=True)


def test_columns_chosen_export_and_bulk_cancel_confirmed_in_the_list(new_page) -> None:
    from allocations.models import GpuRequest, RequestStatus

    page = new_page("alice")
    page.goto("/requests/?mine=1")
    page.get_by_text("Columns", exact=True).click()
    for label in ("GPU model", "Cost / month", "Expires", "Workload name"):
        page.get_by_role("checkbox", name=label).check()
    page.get_by_role("button", name="Save columns").click()
    page.wait_for_url("**/requests/?mine=1")
    headers = page.locator("thead").inner_text().upper()
    assert "GPU MODEL" in headers and "COST / MONTH" in headers and "WORKLOAD NAME" in headers
    assert page.get_by_role("link", name="Export CSV").get_attribute("href") == "/requests/export.csv?mine=1"
    page.screenshot(path=str(SCREENSHOTS / "request-list-columns-1440.png"), full_page=True)

    pending = GpuRequest.objects.filter(requester__username="alice", status=RequestStatus.PENDING_APPROVAL).first()
    assert pending is not None
    page.get_by_role("checkbox", name=f"Tick #{pending.pk} {pending.name}").check()
    page.get_by_role("button", name="Cancel ticked").click()
    dialog = page.locator("#confirm-dialog")
    assert f"#{pending.pk} {pending.name}" in dialog.inner_text()
    page.get_by_role("button", name="Go back").click()
    assert GpuRequest.objects.get(pk=pending.pk).status == RequestStatus.PENDING_APPROVAL
    page.get_by_role("button", name="Cancel ticked").click()
    page.get_by_role("button", name="Cancel them").click()
    page.get_by_text(f"Cancelled 1 request: #{pending.pk}.").wait_for()
    assert GpuRequest.objects.get(pk=pending.pk).status == RequestStatus.RELEASED
    page.set_viewport_size({"width": 390, "height": 844})
    assert _sideways_overflow(page) <= 0
    page.screenshot(path=str(SCREENSHOTS / "request-list-columns-390.png"), full_page=True)


def test_tokens_keep_the_key_on_one_line_and_revoke_in_reach_at_390px(new_page) -> None:
    page = new_page("alice")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/account/tokens/")
    page.fill("#id_name", "laptop-notebook")
    page.get_by_role("button", name="Create token").click()
    row = page.locator("tr[data-token=laptop-notebook]")
    key = row.locator("code.token-prefix")
    line_height = float(key.evaluate("node => parseFloat(getComputedStyle(node).lineHeight) || 20"))
    assert key.bounding_box()["height"] < 1.8 * line_height
    revoke = row.get_by_role("button", name="Revoke")
    box = revoke.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    state, name = row.locator("td[data-label=State]"), row.locator("td[data-label=Name]")
    assert _top(state) < _top(name)
    new_key = page.locator("#new-token").bounding_box()
    assert new_key is not None and new_key["x"] + new_key["width"] <= 390
    assert _sideways_overflow(page) <= 0
    page.screenshot(path=str(SCREENSHOTS / "tokens-narrow-390.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})
    page.screenshot(path=str(SCREENSHOTS / "tokens-narrow-1440.png"), full_page=True)


def test_the_recommendation_summary_stays_beside_submit_at_390px(new_page) -> None:
    page = new_page("alice")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/requests/new/")
    summary = page.locator("#preview-summary")
    assert not summary.is_visible()
    page.select_option("#id_workload_type", "realtime_inference")
    page.fill("#id_gpu_memory_gb", "8")
    page.locator("#preview .rec-resource").wait_for()
    summary.wait_for()
    assert "MIG slice" in summary.inner_text() and "a month" in summary.inner_text()
    # At the top of the long form, Submit and the summary are already on screen (the actions bar is sticky).
    page.evaluate("window.scrollTo(0, 0)")
    submit = page.get_by_role("button", name="Submit for approval")
    box = submit.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844
    assert summary.bounding_box()["y"] + summary.bounding_box()["height"] <= 844
    assert _sideways_overflow(page) <= 0
    page.screenshot(path=str(SCREENSHOTS / "request-form-summary-390.png"))
    page.set_viewport_size({"width": 1440, "height": 900})
    assert not summary.is_visible()  # the preview sits beside the form
    page.screenshot(path=str(SCREENSHOTS / "request-form-summary-1440.png"))
