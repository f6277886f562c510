"""The cost dashboards' controls: range (month, quarter, custom), grouping, filters, drill-down links, idle toggle,
stable colours, empty states and the budget marks; closed months served from the cache."""

from __future__ import annotations

import csv
import io
import json
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.urls import reverse

from allocations.models import SlaTier
from billing import charts
from billing.costs.dashboard_query import DashboardQueryError, parse_dashboard_query
from billing.costs.services import monthly_reports_close
from billing.models import TeamBudget
from tests.billing.cost_helpers import OCT, held_request, load_book, rollup
from tests.billing.test_cost_reports import OCTOBER

pytestmark = pytest.mark.django_db
THIS_MONTH = date(2026, 11, 1)


def _csv(client, chart: str, **params) -> list[dict[str, str]]:
    response = client.get(reverse("billing:dashboard-csv", args=[chart]), params)
    assert response.status_code == 200, response.content
    return list(csv.DictReader(io.StringIO(response.content.decode())))


@pytest.fixture
def october(demo_org):
    """Vision holds 2 GPUs for 10 h and nlp 1 GPU for 5 h in October 2026; vision has a 100 GPU-hour budget."""
    load_book({"H100-80GB": "2.00"})
    demo_org.vision_request = held_request(team=demo_org.team, start=OCT, end=OCT + timedelta(hours=10), quantity=2)
    held_request(team=demo_org.other_team, start=OCT, end=OCT + timedelta(hours=5))
    rollup(cluster=demo_org.cluster, hour=OCT, request=demo_org.vision_request, util=40.0)
    demo_org.team.monthly_gpu_hour_budget = Decimal(100)
    demo_org.team.save(update_fields=["monthly_gpu_hour_budget"])
    return demo_org


def test_the_query_reads_month_quarter_and_custom_ranges_and_names_bad_fields() -> None:
    parse = lambda **p: parse_dashboard_query(p, this_month=THIS_MONTH, may_see_idle=True)  # noqa: E731
    assert parse().months == (THIS_MONTH,) and parse().group == "team" and not parse().show_idle
    quarter = parse(period="quarter", quarter="2026-Q3")
    assert quarter.months == (date(2026, 7, 1), date(2026, 8, 1), date(2026, 9, 1)) and quarter.label == "2026-Q3"
    custom = parse(period="custom", **{"from": "2026-01", "to": "2026-04"}, group="pool", strategy="mig", idle="1")
    assert len(custom.months) == 4 and custom.filters == {"strategy": "mig"} and custom.show_idle
    assert len(parse(month="2026-10").trend_months) == 12  # one month's cost chart shows the year up to it
    for params, field in [
        ({"period": "week"}, "period"),
        ({"period": "quarter", "quarter": "2026-Q5"}, "quarter"),
        ({"period": "custom", "from": "2026-05", "to": "2026-01"}, "from"),
        ({"period": "custom", "from": "2020-01", "to": "2026-01"}, "to"),
        ({"group": "colour"}, "group"),
        ({"month": "26-1"}, "month"),
    ]:
        with pytest.raises(DashboardQueryError, match=f"^{field}: "):
            parse(**params)
    assert not parse_dashboard_query({"idle": "1"}, this_month=THIS_MONTH, may_see_idle=False).show_idle


def test_a_bad_control_is_a_400_naming_it(october, client) -> None:
    client.force_login(october.platform_admin)
    response = client.get(reverse("billing:dashboard"), {"group": "colour"})
    assert response.status_code == 400 and b"group:" in response.content


def test_grouping_filtering_and_the_drill_down_links(october, client) -> None:
    client.force_login(october.platform_admin)
    by_strategy = _csv(client, "cost-over-time", month="2026-10", group="strategy")
    assert {"month": "2026-10", "strategy": "dedicated", "cost": "50.00"} in by_strategy  # 40 vision + 10 nlp
    only_nlp = _csv(client, "cost-per-request", month="2026-10", team="nlp")
    assert {r["team"] for r in only_nlp} == {"nlp"}
    quarter = _csv(client, "cost-per-request", period="quarter", quarter="2026-Q4")
    assert sum(float(r["cost"]) for r in quarter) == 50.0  # October's charges; November has none, December no days
    assert _csv(client, "cost-per-request", period="custom", **{"from": "2026-07", "to": "2026-09"}) == []
    page = client.get(reverse("billing:dashboard"), {"month": "2026-10"})
    figure = json.loads(next(p for p in page.context["panels"] if p["id"] == "cost-over-time")["figure"])
    vision = next(trace for trace in figure["data"] if trace["name"] == "Vision")  # the legend names the team
    link = vision["customdata"][vision["x"].index("2026-10")]
    assert "period=month" in link and "month=2026-10" in link and "team=vision" in link
    drilled = client.get(reverse("billing:dashboard") + link.split("#")[0])
    rows = next(p for p in drilled.context["panels"] if p["id"] == "cost-per-request")["rows"]
    assert rows and {r[0] for r in rows} == {"vision"}
    requests = json.loads(next(p for p in drilled.context["panels"] if p["id"] == "cost-per-request")["figure"])
    assert requests["data"][0]["customdata"] == [f"/requests/{october.vision_request.pk}/"]


def test_idle_is_stacked_on_the_charges_axis_links_to_its_pools_and_colours_are_stable(october, client) -> None:
    client.force_login(october.platform_admin)
    page = client.get(reverse("billing:dashboard"), {"month": "2026-10", "idle": "1"})
    figure = json.loads(page.context["panels"][0]["figure"])
    [idle] = [t for t in figure["data"] if t["name"].startswith("Idle capacity")]
    # A bar among the teams' on the one axis, as Kubecost's __idle__ row: no second axis to make 100k look small.
    assert idle["type"] == "bar" and "yaxis" not in idle and "yaxis2" not in figure["layout"]
    assert figure["layout"]["barmode"] == "stack" and figure["layout"]["yaxis"]["rangemode"] == "tozero"
    assert idle["customdata"] == ["/billing/idle/?month=2026-10"]
    colours = {t["name"]: t["marker"]["color"] for t in figure["data"] if t["type"] == "bar" and t is not idle}
    colours.pop(idle["name"], None)
    assert colours["Vision"] == charts.series_colour("vision") != charts.series_colour("nlp") == colours["NLP"]
    client.force_login(october.member)  # another viewer, only vision: the same colour
    mine = json.loads(client.get(reverse("billing:dashboard"), {"month": "2026-10"}).context["panels"][0]["figure"])
    assert [t["marker"]["color"] for t in mine["data"]] == [colours["Vision"]]


def test_budget_marks_and_empty_states(october, client) -> None:
    client.force_login(october.team_lead)
    page = client.get(reverse("billing:dashboard"), {"month": "2026-10"})
    allocation = json.loads(next(p for p in page.context["panels"] if p["id"] == "allocation-vs-utilization")["figure"])
    budget = next(t for t in allocation["data"] if t["name"] == "Budget (GPU-hours)")
    assert budget["x"] == ["Vision"] and budget["y"] == [100.0]
    TeamBudget.objects.create(team=october.team, monthly_amount=Decimal("120.00"))
    page = client.get(reverse("billing:dashboard"), {"month": "2026-10"})
    cost = json.loads(page.context["panels"][0]["figure"])
    assert any(t["name"] == "Monthly budget (120 USD)" for t in cost["data"])
    assert [s["y0"] for s in cost["layout"]["shapes"]] == [120.0]
    quiet = client.get(reverse("billing:dashboard"), {"month": "2026-10", "strategy": "mig"})
    panel = next(p for p in quiet.context["panels"] if p["id"] == "cost-over-time")
    assert panel["empty"] and b"No GPU cost in October 2026 for these filters." in quiet.content


def test_a_closed_month_is_read_once_then_from_the_cache(october, client, django_assert_max_num_queries) -> None:
    monthly_reports_close(month=OCTOBER, send_email=False)
    cache.clear()
    client.force_login(october.platform_admin)
    first = _csv(client, "strategy-mix", month="2026-10")
    with django_assert_max_num_queries(9):  # session, user, teams, the cache key's stamp; no report lines read
        again = _csv(client, "strategy-mix", month="2026-10")
    assert first == again and first[0]["cost"] == "50.00"


def test_teams_and_tiers_are_named_in_the_legends_not_by_slug(october, client) -> None:
    client.force_login(october.platform_admin)
    page = client.get(reverse("billing:dashboard"), {"month": "2026-10", "group": "tier"})
    cost = json.loads(page.context["panels"][0]["figure"])
    allocation = json.loads(next(p for p in page.context["panels"] if p["id"] == "allocation-vs-utilization")["figure"])
    slugs = set(SlaTier.objects.values_list("slug", flat=True))
    names = set(SlaTier.objects.values_list("name", flat=True))
    legend = {t["name"] for t in cost["data"] if t["type"] == "bar"}
    assert legend and legend <= names and not legend & slugs
    assert set(allocation["data"][0]["x"]) <= names
    link = cost["data"][0]["customdata"][0]  # the click-through still filters by slug
    assert any(f"tier={slug}" in link for slug in slugs)


@pytest.mark.django_db
def test_the_months_anyone_held_gpus_in_are_those_a_held_span_meets(demo_org) -> None:
    from datetime import UTC, date, datetime

    from billing.costs.dashboards import _active_months
    from tests.billing.cost_helpers import held_request

    held_request(team=demo_org.team, start=datetime(2031, 2, 27, 22, tzinfo=UTC), end=datetime(2031, 3, 1, tzinfo=UTC))
    held_request(team=demo_org.team, start=datetime(2031, 5, 31, 23, tzinfo=UTC), end=None)  # still held
    months = [date(2031, month, 1) for month in range(1, 9)]
    # February only: the first span ends at March's first instant. May on, for the span still held.
    assert _active_months(months) == {
        date(2031, 2, 1),
        date(2031, 5, 1),
        date(2031, 6, 1),
        date(2031, 7, 1),
        date(2031, 8, 1),
    }
    assert _active_months([]) == set()


def test_the_idle_page_shows_each_models_idle_and_the_pools_behind_it(october, client) -> None:
    client.force_login(october.platform_admin)
    page = client.get(reverse("billing:idle"), {"month": "2026-10"})
    assert page.status_code == 200
    [h100] = page.context["models"]
    # 16 H100s for 744 h at 2.00 less the 25 GPU-hours held (2 x 10 h + 5 h).
    assert h100["name"] == "H100-80GB" and h100["capacity"] == Decimal("23808.00")
    assert h100["idle"] == Decimal("23758.00") and page.context["total_idle"] == h100["idle"]
    [pool] = h100["pools"]
    assert pool["pool"] == october.pool and pool["gpus"] == 16
    html = page.content.decode()
    assert "23,758.00 USD idle" in html and f'href="/clusters/{october.cluster.name}/"' in html


@pytest.mark.parametrize(("who", "status"), [("member", 403), ("team_lead", 403), ("approver", 200)])
def test_only_those_who_see_every_teams_costs_see_idle(october, client, who, status) -> None:
    client.force_login(getattr(october, who))
    assert client.get(reverse("billing:idle"), {"month": "2026-10"}).status_code == status


def test_a_bad_month_on_the_idle_page_is_a_400_naming_it(october, client) -> None:
    client.force_login(october.platform_admin)
    response = client.get(reverse("billing:idle"), {"month": "26-1"})
    assert response.status_code == 400 and b"month" in response.content


def test_the_period_steps_name_the_period_shown_and_figures_read_alike(october, client) -> None:
    client.force_login(october.team_lead)
    quarter = client.get(reverse("billing:dashboard"), {"period": "quarter", "quarter": "2026-Q4"}).content.decode()
    month = client.get(reverse("billing:dashboard"), {"month": "2026-10"}).content.decode()
    custom = client.get(reverse("billing:dashboard"), {"period": "custom", "from": "2026-07", "to": "2026-09"})

    assert "← Previous quarter" in quarter and "Previous month" not in quarter
    assert "quarter=2026-Q3" in quarter.split('id="period-previous"')[1].split(">")[0]
    assert "← Previous month" in month and "Next month →" in month
    assert "← Previous 3 months" in custom.content.decode() and "Next 3 months →" in custom.content.decode()
    # The KPI prints money as every page does: 2 GPUs x 10 h at 2.00 USD for the lead's team.
    assert '<div class="kpi">40.00 USD</div>' in month


def test_numbers_in_tables_get_thousands_separators() -> None:
    from portal.templatetags.portal_format import number

    assert number(Decimal("8604.53")) == "8,604.53" and number(12345) == "12,345" and number(1.5) == "1.5"
    assert number("vision") == "vision" and number(None) is None and number(True) is True


def test_measured_use_is_grouped_and_filtered_like_the_requests_charge(october, client) -> None:
    """The vision request's measured hour counts where its charge does: under its tier, its pool, and not at all
    when a filter leaves its charge out (a strategy it did not use), rather than under its team."""
    client.force_login(october.platform_admin)

    def measured(**params) -> dict[str, str]:
        rows = _csv(client, "allocation-vs-utilization", month="2026-10", **params)
        return {row[next(iter(row))]: row["measured_gpu_hours"] for row in rows}

    assert measured() == {"vision": "1.0", "nlp": "0.0"}
    assert measured(group="pool") == {"(no pool)": "1.0"}  # held without a pool
    assert measured(group="tier") == {"tier2_batch": "1.0"}
    assert measured(strategy="dedicated") == {"vision": "1.0", "nlp": "0.0"}
    assert measured(strategy="mig") == {}
    assert measured(group="strategy", team="nlp") == {"dedicated": "0.0"}
