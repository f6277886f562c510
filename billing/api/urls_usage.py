"""REST API routes for billing usage."""

urlpatterns: list = []
