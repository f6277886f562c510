"""The audit trail in the admin: read-only (events are written by the services, never by hand)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from audit.models import AuditEvent
from audit.services import audit_record, audit_snapshot


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "actor_label", "source", "action", "object_type", "object_repr", "ip"]
    list_filter = ["source", "action", "object_type"]
    search_fields = ["actor_label", "object_repr", "object_id", "comment"]
    date_hierarchy = "at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class AuditedAdminMixin:
    """Records the admin's saves and deletes, inlines included, in the admin's own transaction.

    The admin is a write path with no service behind it (Django's ModelAdmin saves the form itself), so its hooks are
    where these writes are recorded. A cascade (a team deleted with its quotas) is recorded as the one deletion asked.
    """

    @staticmethod
    def _stored(obj: Any) -> dict[str, Any] | None:
        # The form has already written its values onto ``obj``: the values before come from the database.
        return audit_snapshot(type(obj)._default_manager.filter(pk=obj.pk).first()) if obj.pk else None

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        before = self._stored(obj) if change else None
        super().save_model(request, obj, form, change)  # type: ignore[misc]
        audit_record(actor=request.user, obj=obj, before=before)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        audit_record(actor=request.user, obj=obj, before=None, deleted=True)
        super().delete_model(request, obj)  # type: ignore[misc]

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for obj in queryset:
            audit_record(actor=request.user, obj=obj, before=None, deleted=True)
        super().delete_queryset(request, queryset)  # type: ignore[misc]

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        befores = {f.instance.pk: self._stored(f.instance) for f in formset.forms if f.instance.pk and f.has_changed()}
        for deleted in formset.deleted_forms:
            if deleted.instance.pk:
                audit_record(
                    actor=request.user, obj=deleted.instance, before=befores.get(deleted.instance.pk), deleted=True
                )
        super().save_formset(request, form, formset, change)  # type: ignore[misc]
        for obj in formset.new_objects:
            audit_record(actor=request.user, obj=obj, before=None)
        for obj, _fields in formset.changed_objects:
            audit_record(actor=request.user, obj=obj, before=befores.get(obj.pk))


class AuditedM2MAdminMixin(AuditedAdminMixin):
    """``AuditedAdminMixin`` for a model whose many-to-many fields matter (a user's groups and permissions): one event
    per save, recorded once the admin has saved the relations too, with ``audited_m2m`` beside the fields."""

    audited_m2m: tuple[str, ...] = ()

    def _with_m2m(self, obj: Any) -> dict[str, Any]:
        values = audit_snapshot(obj) or {}
        for name in self.audited_m2m:
            values[name] = sorted(str(related) for related in getattr(obj, name).all())
        return values

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        stored = type(obj)._default_manager.filter(pk=obj.pk).first() if change and obj.pk else None
        form._audit_before = self._with_m2m(stored) if stored is not None else None
        super(AuditedAdminMixin, self).save_model(request, obj, form, change)  # type: ignore[misc]  # recorded below

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)  # type: ignore[misc]
        before = getattr(form, "_audit_before", None)
        after = self._with_m2m(form.instance)
        audit_record(actor=request.user, obj=form.instance, before=before, after=after if before else None)
