"""REST API routes for billing usage."""

from django.urls import path

from billing.api.usage import TeamUsageView

urlpatterns = [
    path("teams/<str:slug>/usage/", TeamUsageView.as_view(), name="team-usage"),
]
