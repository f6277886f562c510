"""API routes of the tokens app under /api/v1/."""

from rest_framework.routers import DefaultRouter

from portal.tokens.api import ApiTokenViewSet

router = DefaultRouter()
router.include_root_view = False
# No format suffixes (`/events.json`): the viewsets' actions take no `format` argument (a suffix answered 500);
# clients choose the format with the Accept header or `?format=`. tests/portal/test_api_format_suffixes.py.
router.include_format_suffixes = False
router.register("tokens", ApiTokenViewSet, basename="api-token")
urlpatterns = router.urls
