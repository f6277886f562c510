"""One audited write: who, when, from where, which object, and its values before and after."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class AuditSource(models.TextChoices):
    BROWSER = "browser", "Browser"
    API = "api", "API"
    ADMIN = "admin", "Admin"
    TASK = "task", "Task"
    SYSTEM = "system", "System (shell, command, migration)"


class AuditAction(models.TextChoices):
    CREATE = "create", "Created"
    UPDATE = "update", "Changed"
    DELETE = "delete", "Deleted"


class AuditEvent(models.Model):
    """A write to an audited object: append-only, kept for ``AUDIT_RETENTION_DAYS``."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_label = models.CharField(max_length=150, help_text="The username then, or the system part that acted.")
    source = models.CharField(max_length=10, choices=AuditSource.choices, default=AuditSource.SYSTEM)
    source_detail = models.CharField(max_length=200, blank=True, help_text="The path or the task's name.")
    ip = models.GenericIPAddressField(null=True, blank=True)
    action = models.CharField(max_length=10, choices=AuditAction.choices)
    object_type = models.CharField(max_length=100, help_text="app_label.model, e.g. allocations.cluster")
    object_id = models.CharField(max_length=64)
    object_repr = models.CharField(max_length=200)
    before = models.JSONField(null=True, blank=True, help_text="Changed fields' old values (all fields on delete).")
    after = models.JSONField(null=True, blank=True, help_text="Changed fields' new values (all fields on create).")
    comment = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id", "at"], name="audit_object_at")]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.actor_label} {self.action} {self.object_type} {self.object_repr}"
