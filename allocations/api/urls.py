"""REST API routes under /api/v1/."""

urlpatterns: list = []
