"""The API tokens page in Chromium: create a named token, copy it with the button, see it listed, revoke it; and the
page at 1440 and 390 px wide (screenshots under var/screenshots/)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"


def test_create_copy_and_revoke_a_token(new_page) -> None:
    from portal.tokens.models import ApiToken

    alice = new_page("alice")
    alice.goto("/account/tokens/")
    alice.fill("#id_name", "training notebook")
    alice.select_option("#id_expires_in_days", "30")
    alice.get_by_role("button", name="Create token").click()
    key = alice.locator("#new-token").inner_text()
    assert key.startswith("gpp_")
    assert 'TEAM = "vision"' in alice.locator("#snippet").inner_text()
    assert key in alice.locator("#snippet").inner_text()

    alice.context.grant_permissions(["clipboard-read", "clipboard-write"])
    alice.locator("#copy-token").click()
    alice.locator("#copy-token-state", has_text="Copied").wait_for()
    assert alice.evaluate("navigator.clipboard.readText()") == key

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width, height in ((1440, 900), (390, 844)):
        alice.set_viewport_size({"width": width, "height": height})
        alice.screenshot(path=str(SCREENSHOTS / f"tokens-{width}.png"), full_page=True)
        # The page's own content fits the screen (the table and the snippet scroll inside their boxes).
        assert alice.evaluate("document.querySelector('main').scrollWidth") <= width

    alice.reload()
    assert alice.locator("#new-token").count() == 0
    row = alice.locator("tr[data-token='training notebook']")
    assert "active" in row.inner_text()
    row.get_by_role("button", name="Revoke").click()
    alice.get_by_text("was revoked").wait_for()
    assert "revoked" in alice.locator("tr[data-token='training notebook']").inner_text()
    assert ApiToken.objects.get(name="training notebook").revoked_at is not None
