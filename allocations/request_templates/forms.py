"""The browser form that edits a request template: its name and scope, the workload profile field by field, and the
purpose, image and command the new-request form starts from. Profile errors land on the field they name."""

from __future__ import annotations

import shlex
from decimal import Decimal
from typing import Any

from django import forms

from allocations.models import GpuModel, RequestTemplate, SlaTier, Team, WorkloadType
from gpucore.profile import ProfileError, WorkloadProfile

EVERY_TEAM = ""
PROFILE_FIELDS = (
    "workload_type",
    "gpu_memory_gb",
    "gpu_count",
    "replicas",
    "sla_tier",
    "gpu_model",
    "duration_hours",
    "latency_p99_ms",
    "expected_utilization_pct",
    "latency_sensitive",
    "isolation_required",
)
LATENCY_CHOICES = [("", "As the workload type implies"), ("true", "Yes"), ("false", "No")]


class RequestTemplateForm(forms.Form):
    name = forms.CharField(max_length=100, label="Template name")
    description = forms.CharField(max_length=300, required=False)
    team = forms.ChoiceField(
        required=False, label="Offered to", help_text="A team's members, or every team (platform admins)."
    )
    workload_type = forms.ChoiceField(choices=WorkloadType.choices, label="Workload type")
    gpu_memory_gb = forms.DecimalField(
        min_value=Decimal("0.1"), max_digits=8, decimal_places=2, label="Peak GPU memory per replica (GB)"
    )
    gpu_count = forms.IntegerField(min_value=1, max_value=64, initial=1, label="GPUs per replica")
    replicas = forms.IntegerField(min_value=1, max_value=1024, initial=1)
    sla_tier = forms.ChoiceField(required=False, label="SLA tier")
    gpu_model = forms.ChoiceField(required=False, label="GPU model")
    duration_hours = forms.DecimalField(required=False, min_value=Decimal("0.1"), label="Duration (hours)")
    latency_p99_ms = forms.DecimalField(required=False, min_value=Decimal("0.1"), label="Latency p99 target (ms)")
    expected_utilization_pct = forms.DecimalField(
        required=False, min_value=Decimal("1"), max_value=Decimal("100"), label="Expected utilization (%)"
    )
    latency_sensitive = forms.ChoiceField(choices=LATENCY_CHOICES, required=False, label="Latency sensitive")
    isolation_required = forms.BooleanField(required=False, label="Needs hardware isolation")
    purpose = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2}))
    image = forms.CharField(required=False, max_length=255, label="Container image")
    command = forms.CharField(
        required=False, max_length=2000, help_text='As in a shell, e.g. python train.py --epochs 3 --name "a b".'
    )

    def __init__(self, *args: Any, teams: list[Team], every_team: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.teams_by_slug = {team.slug: team for team in teams}
        choices = [(EVERY_TEAM, "Every team")] if every_team else []
        self.fields["team"].choices = choices + [(team.slug, team.name) for team in teams]
        self.fields["sla_tier"].choices = [("", "The workload's default")] + [
            (tier.slug, tier.name) for tier in SlaTier.objects.order_by("priority_value", "slug")
        ]
        self.fields["gpu_model"].choices = [("", "Any fitting model")] + [
            (name, name) for name in GpuModel.objects.order_by("name").values_list("name", flat=True)
        ]

    @staticmethod
    def initial_of(template: RequestTemplate) -> dict[str, object]:
        """The form's values from a saved template."""
        profile = template.profile
        latency = profile.get("latency_sensitive")
        return {
            "name": template.name,
            "description": template.description,
            "team": template.team.slug if template.team_id else EVERY_TEAM,
            **{name: profile.get(name) for name in PROFILE_FIELDS if name != "latency_sensitive"},
            # A profile leaving them out means one, as the new-request form does.
            "gpu_count": profile.get("gpu_count") or 1,
            "replicas": profile.get("replicas") or 1,
            "sla_tier": profile.get("sla_tier") or "",
            "gpu_model": profile.get("gpu_model") or "",
            "latency_sensitive": "" if latency is None else ("true" if latency else "false"),
            "isolation_required": bool(profile.get("isolation_required")),
            "purpose": template.purpose,
            "image": template.image,
            "command": shlex.join(template.command or []),
        }

    def clean_team(self) -> str:
        # "Every team" is among the choices only for platform admins, so a blank from anyone else is refused here.
        team = self.cleaned_data.get("team") or EVERY_TEAM
        if team not in dict(self.fields["team"].choices):
            raise forms.ValidationError("Choose one of the teams whose templates you manage.")
        return team

    def clean_command(self) -> list[str]:
        try:
            return shlex.split(self.cleaned_data.get("command") or "")
        except ValueError as exc:
            raise forms.ValidationError(f"Not a command line: {exc}.") from exc

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if any(name in self.errors for name in PROFILE_FIELDS):
            return cleaned
        try:
            WorkloadProfile.from_mapping(self.profile())
        except ProfileError as exc:
            for name, messages in exc.errors.items():
                self.add_error(name if name in self.fields else None, " ".join(messages))
        return cleaned

    def profile(self) -> dict[str, object]:
        """The template's profile, as the API takes it: numbers as numbers, blanks left out."""
        data = self.cleaned_data
        profile: dict[str, object] = {
            "workload_type": data["workload_type"],
            "gpu_memory_gb": float(data["gpu_memory_gb"]),
            "gpu_count": data["gpu_count"],
            "replicas": data["replicas"],
            "isolation_required": bool(data.get("isolation_required")),
        }
        for name in ("duration_hours", "latency_p99_ms", "expected_utilization_pct"):
            if data.get(name) is not None:
                profile[name] = float(data[name])
        for name in ("sla_tier", "gpu_model"):
            if data.get(name):
                profile[name] = data[name]
        if data.get("latency_sensitive"):
            profile["latency_sensitive"] = data["latency_sensitive"] == "true"
        return profile

    def values(self) -> dict[str, object]:
        """The editable fields of ``request_template_save``."""
        data = self.cleaned_data
        return {
            "name": data["name"],
            "description": data["description"],
            "team": self.teams_by_slug.get(data["team"]),
            "profile": self.profile(),
            "purpose": data["purpose"],
            "image": data["image"],
            "command": data["command"],
        }
