"""Billing REST API routes under /api/v1/: a team's usage, monthly reports, the price book and the what-if."""

from django.urls import path

from billing.api.budget import TeamBudgetView
from billing.api.reports import PriceBookView, ReportListView
from billing.api.usage import TeamUsageView
from billing.api.whatif import WhatIfView

urlpatterns = [
    path("teams/<str:slug>/usage/", TeamUsageView.as_view(), name="team-usage"),
    path("teams/<str:slug>/budget/", TeamBudgetView.as_view(), name="team-budget-api"),
    path("reports/", ReportListView.as_view(), name="api-reports"),
    path("price-book/", PriceBookView.as_view(), name="api-price-book"),
    path("what-if/", WhatIfView.as_view(), name="what-if"),
]
