"""Admin pages for single sign-on (the IdP group mapping and the group sync policy), and the admin trimmed to what an
operator edits: the libraries' plumbing tables are not offered."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from audit.admin import AuditedAdminMixin
from portal.models import GroupMapping, GroupSyncPolicy

# Registered by the libraries, edited by no operator: single sign-on's OpenID nonces and associations (protocol
# state), django-axes' per-sign-in logs (the attempts, which unlock a locked-out user, stay), and DRF's token table
# (people manage their keys on the API tokens page, where every change is audited).
PLUMBING = (
    ("social_django", "Nonce"),
    ("social_django", "Association"),
    ("axes", "AccessLog"),
    ("axes", "AccessFailureLog"),
    ("authtoken", "TokenProxy"),
)


def unregister_plumbing(site: admin.AdminSite = admin.site) -> None:
    """Take the plumbing models off the admin (those registered: an app left out of a deployment is skipped)."""
    from django.apps import apps

    for app_label, model_name in PLUMBING:
        try:
            model = apps.get_model(app_label, model_name)
        except LookupError:
            continue
        if site.is_registered(model):
            site.unregister(model)


unregister_plumbing()


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
