"""Admin pages for single sign-on (the IdP group mapping and the group sync policy), audited pages for who may do what
(users, groups, sign-in lockouts), and the admin trimmed to what an operator edits: the libraries' plumbing tables are
not offered."""

from __future__ import annotations

from typing import Any

# Imported first so that their own registrations exist to be replaced below, whatever the app order.
import axes.admin  # noqa: F401
import django.contrib.auth.admin  # noqa: F401
import rest_framework.authtoken.admin  # noqa: F401
from axes.admin import AccessAttemptAdmin
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.models import Group
from django.http import HttpRequest

from audit.admin import AuditedAdminMixin, AuditedM2MAdminMixin
from audit.services import audit_record
from portal.models import GroupMapping, GroupSyncPolicy

User = get_user_model()
LOCKOUT_LIFTED = "sign-in lockout lifted"
for _model in (User, Group, AccessAttempt):
    admin.site.unregister(_model)


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


# --- Who may do what: users, groups, API keys and sign-in lockouts, every change audited ---------------------------


@admin.register(User)
class PrivilegeAuditedUserAdmin(AuditedM2MAdminMixin, UserAdmin):
    """Django's user admin; superuser, staff, active, groups (the approvers among them) and permissions are audited
    with their values before and after."""

    audited_m2m = ("groups", "user_permissions")


@admin.register(Group)
class PrivilegeAuditedGroupAdmin(AuditedM2MAdminMixin, GroupAdmin):
    """Django's group admin; a group's permissions (what its members may do) are audited."""

    audited_m2m = ("permissions",)


@admin.register(AccessAttempt)
class AuditedAccessAttemptAdmin(AuditedAdminMixin, AccessAttemptAdmin):
    """django-axes' attempts: deleting one lifts its lockout, audited as such."""

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        audit_record(actor=request.user, obj=obj, before=None, deleted=True, comment=LOCKOUT_LIFTED)
        admin.ModelAdmin.delete_model(self, request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for obj in queryset:
            audit_record(actor=request.user, obj=obj, before=None, deleted=True, comment=LOCKOUT_LIFTED)
        admin.ModelAdmin.delete_queryset(self, request, queryset)
