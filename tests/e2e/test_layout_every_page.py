"""Every page of the portal, as each role that can see it, in Chromium at 1440 and 390 px wide.

On each page: the document never scrolls sideways (at 1440 px the main navigation fits on one line, at 390 px it
folds behind the Menu button); no table (or chart, image, code block, form control) reaches
past the right edge of its card unless a box inside the card scrolls it; and at 1440 px no table needs to scroll at
all (a column hidden behind a scrollbar on a desktop screen is cut off). The demo organisation gets a week of
utilization (charts, alerts), a pending extension (the queue's second table) and a Finance user, so the pages show
their wide parts. One browser context per role, reused across its pages; a failure names the width, user and page.
Screenshots of every page go to var/screenshots/layout-<width>-<user>-<page>.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.e2e,
    pytest.mark.django_db(transaction=True),
]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "var" / "screenshots"
# {name} stands for the id of the demo request of that name; {month} for this month (YYYY-MM).
PAGES = {
    "alice": [  # a member of Computer Vision
        "/",
        "/requests/",
        "/requests/new/",
        "/requests/{resnet50-training}/",
        "/requests/{detector-serving}/",
        "/requests/{old-augmentation-sweep}/",
        "/teams/",
        "/teams/vision/",
        "/billing/dashboards/",
        "/billing/reports/",
        "/billing/reports/vision/{month}/",
        "/account/tokens/",
        "/search/?q=res",
        "/quotas/",
        "/templates/",
    ],
    # Computer Vision's lead
    "dave": ["/", "/teams/vision/", "/requests/{vision-notebook}/", "/quotas/?team=vision", "/templates/"],
    "bob": ["/", "/requests/{embedding-batch}/", "/teams/nlp/"],  # a member of Natural Language
    "finance": ["/", "/billing/dashboards/", "/billing/idle/", "/billing/reports/", "/billing/reports/nlp/{month}/"],
    "carol": [  # platform approver and admin
        "/",
        "/approvals/",
        "/approvals/?team=vision",
        "/quotas/",
        "/requests/",
        "/requests/{bert-finetune}/",
        "/requests/{resnet50-training}/",
        "/clusters/",
        "/clusters/demo/",
        "/clusters/demo/pools/a100-mig/mig/",
        "/billing/utilization/",
        "/billing/dashboards/",
        "/billing/reports/",
        "/teams/",
        "/teams/nlp/",
        "/audit/",
        "/search/?q=demo",
    ],
}

# What reaches past its card: each table, chart, image, code block or control whose right edge passes the card's
# inner edge with no scrolling box between it and the card (the card's own scrollbar is a fallback, not a layout).
# At 1440 px (wide=true) a table whose scrolling box has to scroll counts as well: its last columns are hidden.
LAYOUT_PROBLEMS = """(wide) => {
  const problems = [];
  const doc = document.documentElement;
  const sideways = doc.scrollWidth - window.innerWidth;
  if (sideways > 0) problems.push(`page scrolls ${sideways}px sideways`);
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const name = (el) => {
    const id = el.id ? '#' + el.id : '';
    const classes = typeof el.className === 'string' ? el.className.trim() : '';
    const cls = classes ? '.' + classes.split(/\\s+/).join('.') : '';
    const head = el.closest('.card, section')?.querySelector('h2, h3, legend, strong');
    return `${el.tagName.toLowerCase()}${id}${cls}` + (head ? ` in "${head.textContent.trim().slice(0, 40)}"` : '');
  };
  const wideParts = 'table, pre, img, svg, canvas, .chart, .series-chart, input, select, textarea, button, code';
  for (const card of document.querySelectorAll('main .card, main section')) {
    const box = card.getBoundingClientRect();
    if (!box.width) continue;
    const style = getComputedStyle(card);
    const inner = box.right - parseFloat(style.borderRightWidth);
    for (const el of card.querySelectorAll(wideParts)) {
      const r = el.getBoundingClientRect();
      if (!r.width || r.right <= inner + 1 || !el.checkVisibility()) continue;
      if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') continue;  // parts of a chart: the chart counts
      let scrolled = false;
      for (let up = el.parentElement; up && up !== card; up = up.parentElement) {
        if (scrolls(up)) { scrolled = true; break; }
      }
      if (!scrolled) problems.push(`${name(el)} spills ${Math.round(r.right - inner)}px out of its card`);
    }
  }
  if (wide) {
    const navLines = new Set([...document.querySelectorAll('.mainnav a')].map((a) => a.getBoundingClientRect().top));
    if (navLines.size > 1) problems.push(`the main navigation wraps onto ${navLines.size} lines`);
    for (const table of document.querySelectorAll('main table')) {
      if (!table.getBoundingClientRect().width || !table.checkVisibility()) continue;  // e.g. in a closed <details>
      for (let up = table.parentElement; up && up !== document.body; up = up.parentElement) {
        if (scrolls(up) && up.scrollWidth > up.clientWidth + 1) {
          problems.push(`${name(table)} scrolls ${up.scrollWidth - up.clientWidth}px sideways inside ${name(up)}`);
          break;
        }
      }
    }
  }
  return [...new Set(problems)];
}"""


def _demo_with_wide_parts() -> dict[str, str]:
    """A week of utilization, a pending extension and a Finance user; returns the path placeholders' values."""
    from django.utils import timezone

    from allocations.models import GpuRequest
    from allocations.requests.extension_services import allocation_extension_request
    from billing.metering.demo_usage import generate_demo_usage
    from tests.billing.cost_helpers import finance_user

    generate_demo_usage(days=8)
    requests = {request.name: request for request in GpuRequest.objects.select_related("requester")}
    training = requests["resnet50-training"]
    allocation_extension_request(
        request=training, acting_user=training.requester, hours=24, reason="The last epochs need another day."
    )
    if not type(training.requester).objects.filter(username="finance").exists():
        finance_user("finance")
    values = {name: str(request.pk) for name, request in requests.items()}
    values["month"] = f"{timezone.now():%Y-%m}"
    return values


def _screenshot_name(width: int, username: str, path: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "home"
    return f"layout-{width}-{username}-{slug}.png"


@pytest.mark.parametrize("width", [1440, 390])
def test_no_page_scrolls_sideways_or_spills_out_of_its_cards(new_page, width: int) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    values = _demo_with_wide_parts()
    problems: dict[str, list[str]] = {}
    for username, paths in PAGES.items():
        page = new_page(username)
        page.set_viewport_size({"width": width, "height": 900})
        # The navigation folds behind the Menu button on a phone and is spelled out on a desktop screen.
        assert page.get_by_role("button", name="Menu").is_visible() == (width < 900)
        assert page.get_by_role("navigation", name="Main").is_visible() == (width >= 900)
        for template in paths:
            path = re.sub(r"\{([^}]+)\}", lambda match: values[match.group(1)], template)
            response = page.goto(path)
            assert response is not None and response.status == 200, f"{username} {path}: {response and response.status}"
            page.wait_for_load_state("networkidle")
            found = page.evaluate(LAYOUT_PROBLEMS, width >= 1200)
            if found:
                problems[f"{width}px {username} {template}"] = found
            page.screenshot(path=str(SCREENSHOTS / _screenshot_name(width, username, template)), full_page=True)
    assert not problems, "\n".join(f"{where}: {'; '.join(found)}" for where, found in problems.items())
