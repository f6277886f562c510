"""REST API routes for billing reports."""

urlpatterns: list = []
