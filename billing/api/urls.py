"""Billing REST API routes under /api/v1/: usage, price book and reports live in their own modules."""

from django.urls import include, path

urlpatterns = [
    path("", include("billing.api.urls_usage")),
    path("", include("billing.api.urls_reports")),
    path("", include("billing.api.urls_whatif")),
]
