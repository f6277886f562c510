"""Browser routes of the billing app (mounted under /billing/): reports, cost dashboards and platform utilization."""

from django.urls import path, re_path

from billing import budget_views, idle_views, utilization_views, views

app_name = "billing"
urlpatterns = [
    path("utilization/", views.platform_utilization_view, name="utilization"),
    path("alerts/action/", utilization_views.alert_action, name="alert-action"),
    path("budgets/", budget_views.budget_list, name="budget-list"),
    path("teams/<slug:slug>/budget/", budget_views.team_budget, name="team-budget"),
    path("reports/", views.report_list, name="report-list"),
    path("reports/<slug:team>/<int:year>-<int:month>/", views.report_detail, name="report-detail"),
    re_path(
        r"^reports/(?P<team>[-a-zA-Z0-9_]+)/(?P<year>\d{4})-(?P<month>\d{1,2})\.(?P<fmt>csv|pdf)$",
        views.report_download,
        name="report-download",
    ),
    path("dashboards/", views.dashboard, name="dashboard"),
    path("idle/", idle_views.idle_breakdown, name="idle"),
    path("dashboards/<slug:chart>.csv", views.dashboard_csv, name="dashboard-csv"),
]
