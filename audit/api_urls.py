"""API route of the audit trail under /api/v1/."""

from rest_framework.routers import DefaultRouter

from audit.api import AuditEventViewSet

router = DefaultRouter()
router.include_root_view = False
# No format suffixes, as every API router here (tests/portal/test_api_format_suffixes.py): `?format=csv` chooses CSV.
router.include_format_suffixes = False
router.register("audit-events", AuditEventViewSet, basename="audit-event")
urlpatterns = router.urls
