"""Admin pages of request templates and quota increase requests (registered by ``allocations.admin``)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from allocations.models import QuotaIncreaseRequest, RequestTemplate
from audit.admin import AuditedAdminMixin


@admin.register(RequestTemplate)
class RequestTemplateAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["name", "team", "description", "updated_at"]
    list_filter = ["team"]
    search_fields = ["name", "description"]
    readonly_fields = ["created_by", "created_at", "updated_at"]


@admin.register(QuotaIncreaseRequest)
class QuotaIncreaseRequestAdmin(admin.ModelAdmin):
    """Read-only: approvers decide on the portal's quota page (the service audits and applies the decision)."""

    list_display = ["team", "quota", "limit_when_asked", "requested_limit", "status", "requested_by", "created_at"]
    list_filter = ["status"]

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False
