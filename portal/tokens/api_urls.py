"""API routes of the tokens app under /api/v1/."""

from rest_framework.routers import DefaultRouter

from portal.tokens.api import ApiTokenViewSet

router = DefaultRouter()
router.include_root_view = False
router.register("tokens", ApiTokenViewSet, basename="api-token")
urlpatterns = router.urls
