from django.apps import AppConfig


class AuditConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "audit"
    verbose_name = "Audit trail"

    def ready(self) -> None:
        from audit import context
        from audit.models import AuditEvent
        from audit.selectors import audit_events_visible_to
        from infra.scoping import register_visibility

        context.connect_celery_signals()
        register_visibility(AuditEvent, audit_events_visible_to)
