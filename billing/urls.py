"""Browser routes of the billing app: utilization pages and cost reports/dashboards live in their own modules."""

from django.urls import include, path

app_name = "billing"
urlpatterns = [
    path("", include("billing.urls_utilization")),
    path("", include("billing.urls_reports")),
]
