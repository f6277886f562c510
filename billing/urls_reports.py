"""Browser routes for billing reports pages."""

urlpatterns: list = []
