"""Request templates: a named workload profile a team (or the whole organisation) starts new requests from."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from allocations.models.teams import Team
from gpucore.decision import ProfileError, WorkloadProfile


class RequestTemplate(models.Model):
    """A preset of the new-request form: the workload profile and, optionally, image, command and purpose.

    ``team`` empty: offered to every team (managed by platform admins); else only to that team's members (managed by
    its leads and platform admins).
    """

    name = models.CharField(max_length=100)
    description = models.CharField(max_length=300, blank=True)
    team = models.ForeignKey(
        Team,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="request_templates",
        help_text="Empty: offered to every team.",
    )
    profile = models.JSONField(
        help_text='The workload profile fields, as the API takes them, e.g. {"workload_type": "training", '
        '"gpu_memory_gb": 40}.'
    )
    purpose = models.TextField(blank=True)
    image = models.CharField(max_length=255, blank=True)
    command = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="unique_request_template_name", nulls_distinct=False)
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.team.name if self.team_id else 'every team'})"

    @property
    def scope_label(self) -> str:
        return self.team.name if self.team_id else "Every team"

    def clean(self) -> None:
        errors: dict[str, Any] = {}
        try:
            WorkloadProfile.from_mapping(self.profile if isinstance(self.profile, dict) else {})
        except ProfileError as exc:
            errors["profile"] = [f"{name}: {' '.join(messages)}" for name, messages in exc.errors.items()]
        if not isinstance(self.command, list) or not all(isinstance(part, str) for part in self.command):
            errors["command"] = 'The command is a list of strings, e.g. ["python", "train.py"].'
        if errors:
            raise ValidationError(errors)
