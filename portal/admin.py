"""Admin pages for single sign-on: the IdP group mapping and the group sync policy (platform admins)."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from audit.admin import AuditedAdminMixin
from portal.models import GroupMapping, GroupSyncPolicy


@admin.register(GroupMapping)
class GroupMappingAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["group", "include_subgroups", "team", "role", "access_group"]
    list_filter = ["team", "role", "access_group"]
    search_fields = ["group", "team__name", "team__slug"]
    autocomplete_fields = ["team"]
    fields = ["group", "include_subgroups", "team", "role", "access_group"]


@admin.register(GroupSyncPolicy)
class GroupSyncPolicyAdmin(AuditedAdminMixin, admin.ModelAdmin):
    list_display = ["__str__", "empty_claim_removes", "updated_at"]
    fields = ["empty_claim_removes"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        # One policy row: add it once, then edit it.
        return super().has_add_permission(request) and not GroupSyncPolicy.objects.exists()

    def has_delete_permission(self, request: HttpRequest, obj: GroupSyncPolicy | None = None) -> bool:
        return False
