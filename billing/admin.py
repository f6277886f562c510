"""Admin of cost: price books (loaded from YAML, read here), imported usage, and read-only monthly reports."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from audit.admin import AuditedAdminMixin
from billing.costs.chat_urls import chat_url_refusal
from billing.models import (
    BudgetNotice,
    GpuPrice,
    ImportedUsage,
    MonthlyReport,
    MonthlyReportLine,
    OrganisationMonthSummary,
    PriceBook,
    ReportStatus,
    SlaMultiplier,
    TeamBudget,
)


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class GpuPriceInline(ReadOnlyInline):
    model = GpuPrice
    fields = ["gpu_model", "hourly_rate", "list_hourly", "purchase_price", "tdp_watts", "pue", "kwh_price"]


class SlaMultiplierInline(ReadOnlyInline):
    model = SlaMultiplier
    fields = ["tier_slug", "multiplier"]


@admin.register(PriceBook)
class PriceBookAdmin(AuditedAdminMixin, admin.ModelAdmin):
    """Price books are loaded with ``manage.py load_price_book`` (or the API) so every version has its YAML."""

    list_display = ["version", "effective_from", "currency", "loaded_at", "loaded_by"]
    readonly_fields = ["version", "currency", "effective_from", "source", "loaded_at", "loaded_by"]
    fields = [*readonly_fields, "notes"]
    inlines = [GpuPriceInline, SlaMultiplierInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(ImportedUsage)
class ImportedUsageAdmin(admin.ModelAdmin):
    list_display = ["team", "request_label", "gpu_model", "strategy", "resource_name", "quantity", "start", "end"]
    list_filter = ["strategy", "gpu_model", "team"]
    search_fields = ["request_label", "source_file"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReportLineInline(ReadOnlyInline):
    model = MonthlyReportLine
    fields = ["request_ref", "name", "strategy", "resource_name", "quantity", "allocated_gpu_hours", "rate", "amount"]


@admin.register(MonthlyReport)
class MonthlyReportAdmin(admin.ModelAdmin):
    """Reports are written by closing a month; a closed one can be read here, never changed or deleted."""

    list_display = ["month", "team", "status", "total", "idle_share", "saving_vs_dedicated", "closed_at", "emailed_at"]
    list_filter = ["status", "month"]
    inlines = [ReportLineInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is not None and obj.status != ReportStatus.CLOSED


@admin.register(OrganisationMonthSummary)
class OrganisationMonthSummaryAdmin(admin.ModelAdmin):
    list_display = ["month", "capacity_cost", "allocated_cost", "idle_cost", "idle_shared", "total"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class TeamBudgetAdminForm(forms.ModelForm):
    """The chat URL carries the chat's token: never shown back (as on the budget page); blank keeps the one set."""

    chat_webhook_url = forms.CharField(
        label="Chat (apprise URL)",
        required=False,
        max_length=500,
        help_text="slack://..., workflows://... or mailto://...; blank keeps the current one.",
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
    )
    remove_chat = forms.BooleanField(required=False, label="No chat: e-mail the leads only")

    class Meta:
        model = TeamBudget
        fields = ["team", "monthly_amount", "thresholds_pct", "chat_webhook_url"]

    def clean_chat_webhook_url(self) -> str:
        typed = (self.cleaned_data.get("chat_webhook_url") or "").strip()
        if not typed:
            return self.instance.chat_webhook_url if self.instance.pk else ""
        if typed != self.instance.chat_webhook_url:
            # Only staff reach the admin: platform admins, who may name any service, but never a private address.
            refusal = chat_url_refusal(typed, privileged=True)
            if refusal:
                raise forms.ValidationError(refusal)
        return typed

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("remove_chat"):
            cleaned["chat_webhook_url"] = ""
            self.instance.chat_webhook_url = ""
        return cleaned


@admin.register(TeamBudget)
class TeamBudgetAdmin(AuditedAdminMixin, admin.ModelAdmin):
    """A team's monthly money budget and its thresholds; audited like every write to a team's settings."""

    form = TeamBudgetAdminForm
    list_display = ["team", "monthly_amount", "currency", "thresholds_pct", "has_chat"]
    fields = ["team", "monthly_amount", "thresholds_pct", "chat_webhook_url", "remove_chat"]
    autocomplete_fields = ["team"]

    @admin.display(boolean=True, description="chat")
    def has_chat(self, obj: TeamBudget) -> bool:
        return bool(obj.chat_webhook_url)


@admin.register(BudgetNotice)
class BudgetNoticeAdmin(admin.ModelAdmin):
    """Thresholds crossed and their delivery, written by ``billing.check_team_budgets``; read here."""

    list_display = [
        "month",
        "team",
        "threshold_pct",
        "spent",
        "budget",
        "crossed_at",
        "emailed_at",
        "chat_sent_at",
        "expired_at",
    ]
    list_filter = ["month", "threshold_pct"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
