"""Browser pages of billing: monthly reports (list, detail, CSV, PDF), the cost dashboards and platform utilization.

Thin: the teams come from ``cost_teams_visible_to`` so another team's report is a 404; the figures come from the
selectors (``billing.costs``, ``billing.utilization``), the dashboard tables and the report payloads shared with the
API; every chart is drawn here, from ``billing.charts``. Platform utilization is for platform approvers (others: 403).
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from billing import charts
from billing.costs import dashboards
from billing.costs.reports import live_report_payload, month_reports, report_csv, report_pdf
from billing.costs.selectors import (
    cost_teams_visible_to,
    month_chargeback,
    monthly_reports_visible_to,
    next_month,
    user_can_view_all_costs,
)
from billing.utilization.selectors import capacity_forecast, platform_utilization, pool_forecasts
from gpucore.exports import csv_text
from gpucore.months import MonthError, parse_month

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
    estimates = []
    if page.number == 1:
        chargeback = month_chargeback(month=month)
        for t in teams.filter(slug=team) if team else teams:
            charge = chargeback.teams.get(t.slug)
            if charge is not None and charge.lines:
                estimates.append(live_report_payload(team=t, month=month, charge=charge))
    context = {"page": page, "teams": teams, "team": team, "estimates": estimates, "month": month}
    return render(request, "billing/report_list.html", context)


def _report_payload(request: HttpRequest, slug: str, year: int, month: int) -> dict[str, Any]:
    team = get_object_or_404(cost_teams_visible_to(request.user), slug=slug)
    try:
        first = date(year, month, 1)
    except ValueError as exc:
        raise Http404("No such month.") from exc
    reports = month_reports(teams=[team], month=first)
    if not reports:
        raise Http404("That month has not started.")
    return reports[0]


@login_required
def report_detail(request: HttpRequest, team: str, year: int, month: int) -> HttpResponse:
    """One team's month: every line with its rate, hours and measured utilization; CSV and PDF downloads."""
    payload = _report_payload(request, team, year, month)
    return render(request, "billing/report_detail.html", {"report": payload, "year": year, "month": month})


@login_required
def report_download(request: HttpRequest, team: str, year: str, month: str, fmt: str) -> HttpResponse:
    """The report as CSV or PDF."""
    payload = _report_payload(request, team, int(year), int(month))
    name = f"chargeback-{payload['team']}-{payload['month']}"
    if fmt == "pdf":
        response = HttpResponse(report_pdf(payload), content_type="application/pdf")
    else:
        response = HttpResponse(report_csv([payload]), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


CHARTS = ("cost-over-time", "allocation-vs-utilization", "strategy-mix", "pool-heatmap", "cost-per-request")


def _tables(request: HttpRequest, month: date, only: str | None = None) -> dict[str, dashboards.Table]:
    teams = cost_teams_visible_to(request.user)
    show_idle = user_can_view_all_costs(request.user)
    now = timezone.now()
    memo = dashboards.ChargebackMemo(now)
    tables: dict[str, dashboards.Table] = {}
    if only in (None, "cost-over-time"):
        tables["cost-over-time"] = dashboards.cost_over_time(
            month=month, teams=teams, now=now, show_idle=show_idle, memo=memo
        )
    if only in (None, "pool-heatmap"):
        scope = None if show_idle else teams
        tables["pool-heatmap"] = dashboards.pool_heatmap(month=month, teams=scope, now=now)
    if only is None or only in {"allocation-vs-utilization", "strategy-mix", "cost-per-request"}:
        data = dashboards.month_rows(month=month, teams=teams, now=now, show_idle=show_idle, memo=memo)
        tables["allocation-vs-utilization"] = dashboards.allocation_vs_utilization(data=data, teams=teams)
        tables["strategy-mix"] = dashboards.strategy_mix(data=data)
        tables["cost-per-request"] = dashboards.cost_per_request(data=data)
    return tables


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    """The cost dashboards for a month (default: this one), each chart with its table and CSV."""
    month = month_param(request.GET.get("month"), default=_this_month())
    tables = _tables(request, month)
    currency = settings.PORTAL_CURRENCY
    figures = {
        "cost-over-time": charts.cost_over_time_figure(tables["cost-over-time"], currency),
        "allocation-vs-utilization": charts.allocation_vs_utilization_figure(tables["allocation-vs-utilization"]),
        "strategy-mix": charts.strategy_mix_figure(tables["strategy-mix"], currency),
        "pool-heatmap": charts.heatmap_figure(tables["pool-heatmap"]),
        "cost-per-request": charts.cost_per_request_figure(tables["cost-per-request"], currency),
    }
    titles = {
        "cost-over-time": "Cost over time",
        "allocation-vs-utilization": "Allocation vs measured utilization",
        "strategy-mix": "Strategy mix and saving vs dedicated",
        "pool-heatmap": "Pool utilization by hour",
        "cost-per-request": "Cost per request",
    }
    panels = [
        {
            "id": key,
            "title": titles[key],
            "figure": charts.figure_json(figures[key]),
            "columns": tables[key][0],
            "rows": tables[key][1][:200],
            "row_count": len(tables[key][1]),
            "empty": not tables[key][1],
        }
        for key in CHARTS
    ]
    if user_can_view_all_costs(request.user):
        panels.append(_forecast_panel())
    strategy_rows = tables["strategy-mix"][1]
    context = {
        "month": month,
        "panels": panels,
        "show_idle": user_can_view_all_costs(request.user),
        "total_cost": sum((row[2] for row in strategy_rows), start=0),
        "total_saving": sum((row[4] for row in strategy_rows), start=0),
        "currency": currency,
        "is_open": month >= _this_month(),
        "previous": dashboards.months_back(month, 2)[0],
        "next": None if month >= _this_month() else next_month(month),
    }
    return render(request, "billing/dashboard.html", context)


FORECAST = "capacity-forecast"


def _forecast_panel() -> dict[str, Any]:
    """The capacity forecast (platform-wide, so only for those who see all costs): chart and table."""
    forecasts = pool_forecasts(now=timezone.now())
    columns, rows = capacity_forecast(now=timezone.now(), forecasts=forecasts)
    figure = charts.allocation_forecast_figure(forecasts)
    return {
        "id": FORECAST,
        "title": "Capacity forecast (7-day trend, 30 days ahead)",
        "figure": json.dumps({"data": figure["data"], "layout": figure["layout"]}) if figure else json.dumps({}),
        "columns": columns,
        "rows": rows,
        "row_count": len(rows),
        "empty": figure is None,
    }


@login_required
def dashboard_csv(request: HttpRequest, chart: str) -> HttpResponse:
    """The table behind one dashboard chart, as CSV."""
    forecast = chart == FORECAST and user_can_view_all_costs(request.user)
    if chart not in CHARTS and not forecast:
        raise Http404("No such chart.")
    month = month_param(request.GET.get("month"), default=_this_month())
    if forecast:
        columns, rows = capacity_forecast(now=timezone.now())
    else:
        columns, rows = _tables(request, month, only=chart)[chart]
    response = HttpResponse(csv_text(columns, rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{chart}-{month:%Y-%m}.csv"'
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
