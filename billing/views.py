"""Browser pages of billing: monthly reports (list, detail, CSV, PDF), the cost dashboards and platform utilization.

Thin: the teams come from ``cost_teams_visible_to`` so another team's report is a 404; the figures come from the
selectors (``billing.costs``, ``billing.utilization``), the dashboard tables and the report payloads shared with the
API; every chart is drawn here, from ``billing.charts``. Platform utilization is for platform approvers (others: 403).
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils import timezone

from billing import charts
from billing.costs import dashboard_usage, dashboards
from billing.costs.chargeback import month_chargeback, priced_to
from billing.costs.dashboard_query import GROUPS, DashboardQuery, DashboardQueryError, parse_dashboard_query
from billing.costs.report_pdf import report_pdf
from billing.costs.reports import live_report_payload, month_reports, report_csv
from billing.costs.visibility import cost_teams_visible_to, monthly_reports_visible_to, user_can_view_all_costs
from billing.costs.waste import report_waste
from billing.utilization.selectors import capacity_forecast, platform_utilization
from billing.utilization.stored_forecast import stored_pool_forecasts
from gpucore.exports import csv_text
from gpucore.months import MonthError, add_months, parse_month, quarter_label

PAGE_SIZE = 50


def month_param(value: str | None, *, default: date) -> date:
    """``?month=YYYY-MM`` as the first day of that month (``default`` when absent); a 400 naming ``month`` otherwise."""
    if not value:
        return default
    try:
        return parse_month(value)
    except MonthError as exc:
        raise BadRequest(f"month: {exc}") from exc


def _this_month() -> date:
    return timezone.now().date().replace(day=1)


@login_required
def report_list(request: HttpRequest) -> HttpResponse:
    """Closed monthly reports of the user's teams (every team for approvers and Finance), with this month's estimate."""
    reports = monthly_reports_visible_to(user=request.user).order_by("-month", "team__name")
    team = request.GET.get("team") or ""
    if team:
        reports = reports.filter(team__slug=team)
    page = Paginator(reports, PAGE_SIZE).get_page(request.GET.get("page"))
    teams = cost_teams_visible_to(request.user).order_by("name")
    month = _this_month()
    as_of = priced_to(timezone.now())  # as the budgets and the team pages price the month
    estimates = []
    if page.number == 1:
        chargeback = month_chargeback(month=month, now=as_of)
        for t in teams.filter(slug=team) if team else teams:
            charge = chargeback.teams.get(t.slug)
            if charge is not None and charge.lines:
                estimates.append(live_report_payload(team=t, month=month, charge=charge))
    context = {"page": page, "teams": teams, "team": team, "estimates": estimates, "month": month, "as_of": as_of}
    return render(request, "billing/report_list.html", context)


def _report_payload(request: HttpRequest, slug: str, year: int, month: int, as_of: datetime) -> dict[str, Any]:
    """The team's report of the month: stored where closed, else its estimate priced to ``as_of``."""
    team = get_object_or_404(cost_teams_visible_to(request.user), slug=slug)
    try:
        first = date(year, month, 1)
    except ValueError as exc:
        raise Http404("No such month.") from exc
    reports = month_reports(teams=[team], month=first, now=as_of)
    if not reports:
        raise Http404("That month has not started.")
    return reports[0]


@login_required
def report_detail(request: HttpRequest, team: str, year: int, month: int) -> HttpResponse:
    """One team's month: every line with its rate, hours and measured utilization; CSV and PDF downloads."""
    as_of = priced_to(timezone.now())  # an open month, as the budgets and the team pages price it
    payload = _report_payload(request, team, year, month, as_of)
    context = {"report": payload, "year": year, "month": month, "waste": report_waste(payload), "as_of": as_of}
    return render(request, "billing/report_detail.html", context)


@login_required
def report_download(request: HttpRequest, team: str, year: str, month: str, fmt: str) -> HttpResponse:
    """The report as CSV or PDF."""
    payload = _report_payload(request, team, int(year), int(month), priced_to(timezone.now()))
    name = f"chargeback-{payload['team']}-{payload['month']}"
    if fmt == "pdf":
        response = HttpResponse(report_pdf(payload), content_type="application/pdf")
    else:
        response = HttpResponse(report_csv([payload]), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


CHARTS = ("cost-over-time", "allocation-vs-utilization", "strategy-mix", "pool-heatmap", "cost-per-request")
TITLES = {
    "cost-over-time": "Cost over time",
    "allocation-vs-utilization": "Allocation vs measured utilization",
    "strategy-mix": "Strategy mix and saving vs dedicated",
    "pool-heatmap": "Pool utilization by day",
    "cost-per-request": "Cost per request",
}


def _dashboard_query(request: HttpRequest) -> DashboardQuery:
    try:
        return parse_dashboard_query(
            request.GET, this_month=_this_month(), may_see_idle=user_can_view_all_costs(request.user)
        )
    except DashboardQueryError as exc:
        raise BadRequest(str(exc)) from exc


def _tables(request: HttpRequest, query: DashboardQuery, only: str | None = None) -> dict[str, dashboards.Table]:
    teams = cost_teams_visible_to(request.user)
    now = timezone.now()
    memo = dashboards.ChargebackMemo(now)
    tables: dict[str, dashboards.Table] = {}
    if only in (None, "cost-over-time"):
        trend = dashboards.range_rows(query=query, months=query.trend_months, teams=teams, now=now, memo=memo)
        tables["cost-over-time"] = dashboards.cost_over_time(query=query, data=trend)
    if only in (None, "pool-heatmap"):
        scope = None if user_can_view_all_costs(request.user) else teams
        tables["pool-heatmap"] = dashboard_usage.pool_heatmap(query=query, teams=scope, now=now)
    if only is None or only in {"allocation-vs-utilization", "strategy-mix", "cost-per-request"}:
        data = dashboards.range_rows(query=query, months=query.months, teams=teams, now=now, memo=memo)
        if only in (None, "allocation-vs-utilization"):
            tables["allocation-vs-utilization"] = dashboard_usage.allocation_vs_utilization(
                query=query, data=data, teams=teams, now=now
            )
        if only in (None, "strategy-mix"):
            rows = dashboards.filtered((row for month in data for row in month.rows), query)
            tables["strategy-mix"] = dashboards.strategy_mix(rows=rows)
        if only in (None, "cost-per-request"):
            tables["cost-per-request"] = dashboards.cost_per_request(query=query, data=data)
    return tables


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """The cost dashboards for a range of months (default: this month), grouped and filtered; charts with tables.

    A range it cannot show (e.g. more months than a custom range allows) answers 400 with the default view and the
    reason next to the controls, not an error page."""
    query_error = None
    try:
        query = _dashboard_query(request)
    except BadRequest as exc:
        field, _, message = str(exc).partition(": ")
        query_error = {"field": field, "message": message or str(exc)}
        query = parse_dashboard_query({}, this_month=_this_month(), may_see_idle=user_can_view_all_costs(request.user))
    tables = _tables(request, query)
    currency = settings.PORTAL_CURRENCY
    group_label = GROUPS[query.group].lower()
    budgets = None
    if query.group == "team":
        budgets = dashboards.team_budgets(teams=cost_teams_visible_to(request.user), months=len(query.months))
    drill_down = query.drill_down()
    choices = dashboards.filter_choices(teams=cost_teams_visible_to(request.user))
    names = dict(choices[query.group])
    money_budget = dashboards.money_budget(query=query, teams=cost_teams_visible_to(request.user))
    figures = {
        "cost-over-time": charts.cost_over_time_figure(
            tables["cost-over-time"],
            currency,
            drill_down=lambda month, group: drill_down(parse_month(month), group),
            group_label=group_label,
            budget=money_budget,
            names=names,
            idle_link=lambda month: f"{reverse('billing:idle')}?month={month}",
        ),
        "allocation-vs-utilization": charts.allocation_vs_utilization_figure(
            tables["allocation-vs-utilization"], budgets, names
        ),
        "strategy-mix": charts.strategy_mix_figure(tables["strategy-mix"], currency),
        "pool-heatmap": charts.heatmap_figure(tables["pool-heatmap"]),
        "cost-per-request": charts.cost_per_request_figure(
            tables["cost-per-request"],
            currency,
            request_url=lambda pk: reverse("allocations:request-detail", args=[pk]),
            team_names=dict(choices["team"]),
        ),
    }
    panels = [
        {
            "id": key,
            "title": TITLES[key],
            "figure": charts.figure_json(figures[key]),
            "columns": tables[key][0],
            "rows": tables[key][1][:200],
            "row_count": len(tables[key][1]),
            "empty": not any(_has_value(row) for row in tables[key][1]),
        }
        for key in CHARTS
    ]
    if user_can_view_all_costs(request.user):
        panels.append(_forecast_panel())
    strategy_rows = tables["strategy-mix"][1]
    this_month = _this_month()
    context = {
        "query": query,
        "panels": panels,
        "may_see_idle": user_can_view_all_costs(request.user),
        "total_cost": sum((row[2] for row in strategy_rows), start=0),
        "total_saving": sum((row[4] for row in strategy_rows), start=0),
        "currency": currency,
        "is_open": query.last >= this_month,
        "groups": GROUPS,
        "filter_fields": _filter_fields(query, choices),
        "quarters": [quarter_label(add_months(this_month, -3 * n)) for n in range(8)],
        "query_string": urlencode(query.params()),
        "previous": query.step(-1),
        "next": None if query.last >= this_month else query.step(1),
        "budget_note": bool(budgets),
        "money_budget": money_budget,
        "query_error": query_error,
    }
    return render(request, "billing/dashboard.html", context, status=400 if query_error else 200)


def _filter_fields(query: DashboardQuery, choices: dict[str, list[tuple[str, str]]]) -> list[dict[str, Any]]:
    fields = []
    for name, options in choices.items():
        current = query.filters.get(name, "")
        # A filter set by a link keeps its value even when it is not among the usual choices.
        extra = [(current, current)] if current and current not in dict(options) else []
        fields.append({"name": name, "label": GROUPS[name], "current": current, "options": options + extra})
    return fields


def _has_value(row: list[Any]) -> bool:
    """A table row that says something: any non-zero number (a zero-cost team is an empty state, not a chart)."""
    return any(isinstance(v, (int, float, Decimal)) and not isinstance(v, bool) and v != 0 for v in row[1:])


FORECAST = "capacity-forecast"


def _forecast_panel() -> dict[str, Any]:
    """The capacity forecast (platform-wide, so only for those who see all costs): chart and table, as stored by the
    hourly task (``billing.utilization.stored_forecast``)."""
    forecasts = stored_pool_forecasts(now=timezone.now())
    columns, rows = capacity_forecast(now=timezone.now(), forecasts=forecasts)
    figure = charts.allocation_forecast_figure(forecasts)
    return {
        "id": FORECAST,
        "title": "Capacity forecast (7-day trend, 30 days ahead)",
        "figure": charts.figure_json(figure or {}),
        "columns": columns,
        "rows": rows,
        "row_count": len(rows),
        "empty": figure is None,
    }


@login_required
def dashboard_csv(request: HttpRequest, chart: str) -> HttpResponse:
    """The table behind one dashboard chart (same range, grouping and filters as the page), as CSV."""
    forecast = chart == FORECAST and user_can_view_all_costs(request.user)
    if chart not in CHARTS and not forecast:
        raise Http404("No such chart.")
    query = _dashboard_query(request)
    if forecast:
        columns, rows = capacity_forecast(now=timezone.now(), forecasts=stored_pool_forecasts(now=timezone.now()))
    else:
        columns, rows = _tables(request, query, only=chart)[chart]
    response = HttpResponse(csv_text(columns, rows), content_type="text/csv; charset=utf-8")
    span = f"{query.first:%Y-%m}" if len(query.months) == 1 else f"{query.first:%Y-%m}_{query.last:%Y-%m}"
    response["Content-Disposition"] = f'attachment; filename="{chart}-{span}.csv"'
    return response


@login_required
def platform_utilization_view(request: HttpRequest) -> HttpResponse:
    """The platform utilization page (approvers only), with the allocation and utilization forecast charts."""
    try:
        context = platform_utilization(user=request.user)
    except PermissionError as exc:
        raise PermissionDenied(str(exc)) from exc
    context["allocation_chart"] = charts.allocation_forecast_figure(context["forecasts"])
    context["utilization_chart"] = charts.utilization_forecast_figure(context["forecasts"])
    return render(request, "billing/utilization_platform.html", context)
