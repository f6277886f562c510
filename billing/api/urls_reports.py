"""REST API routes of cost: monthly reports and the price book (under /api/v1/)."""

from django.urls import path

from billing.api.reports import PriceBookView, ReportListView

urlpatterns = [
    path("reports/", ReportListView.as_view(), name="api-reports"),
    path("price-book/", PriceBookView.as_view(), name="api-price-book"),
]
