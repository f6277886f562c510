"""Browser routes for billing utilization pages."""

from django.urls import path

from billing.views_utilization import platform_utilization_view

urlpatterns = [
    path("utilization/", platform_utilization_view, name="utilization"),
]
