"""Browser routes for billing utilization pages."""

urlpatterns: list = []
