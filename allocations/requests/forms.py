"""Browser forms: they check the shape of the input; the services decide what is allowed."""

from __future__ import annotations

import shlex
from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.utils import timezone

from allocations.models import MAX_EXTENSION_HOURS, Cluster, GpuModel, SlaTier, WorkloadType
from allocations.reference_data import with_default_replicas
from allocations.requests.services import OPEN_DUPLICATE
from allocations.selectors import teams_of
from gpucore.decision import ProfileError, WorkloadProfile
from gpucore.profile import parse_profile_field

# The workload profile fields (docs/api.md, "Workload profile"), in contract order (the profile itself is the source).
PROFILE_FIELDS = WorkloadProfile.field_names()
LATENCY_CHOICES = [("", "Auto (by workload type)"), ("true", "Yes"), ("false", "No")]


class ProfileNumberField(forms.Field):
    """A workload-profile number checked by the core's own parser (``gpucore.profile.parse_profile_field``), so the
    form, its live preview and the API refuse the same values with the same message (no second set of bounds here)."""

    def __init__(self, *, profile_field: str, integer: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.NumberInput(attrs={"step": "1" if integer else "any"}))
        super().__init__(**kwargs)
        self.profile_field = profile_field

    def to_python(self, value: Any) -> Any:
        if value in self.empty_values:
            return None
        try:
            return parse_profile_field(self.profile_field, value)
        except ProfileError as exc:
            raise ValidationError(exc.errors[self.profile_field]) from None


class GpuRequestForm(forms.Form):
    """A new GPU request: who and what for, the workload profile, how long, and optionally where and what runs."""

    team = forms.ModelChoiceField(queryset=None, to_field_name="slug", empty_label=None)
    name = forms.CharField(max_length=100, help_text="Short and recognisable, e.g. resnet50-training.")
    purpose = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    workload_type = forms.ChoiceField(choices=WorkloadType.choices, initial=WorkloadType.TRAINING)
    gpu_memory_gb = ProfileNumberField(
        profile_field="gpu_memory_gb",
        label="Peak GPU memory per replica (GiB)",
        help_text=(
            "In GiB, as nvidia-smi and PyTorch report it, for all of one replica's GPUs together (8 GPUs of 70 GiB "
            "each is 560 GiB). It is fitted with 15 % headroom against the memory a GPU or slice really offers: "
            "a 3g.20gb slice offers 19.62 GiB, so it holds up to 16.68 GiB."
        ),
    )
    gpu_count = ProfileNumberField(profile_field="gpu_count", integer=True, label="GPUs per replica", initial=1)
    replicas = ProfileNumberField(
        profile_field="replicas",
        integer=True,
        required=False,
        widget=forms.NumberInput(attrs={"step": "1", "placeholder": "1 (2 for tier-1 serving)"}),
        help_text=(
            "Empty: 1, or 2 for real-time inference on tier 1 (99.99 % needs a second replica on another node). "
            "Training or HPC with more than one replica runs as one distributed job (torchrun/NCCL): its pods must "
            "start together. On a cluster without Kueue, partial admission can deadlock GPUs."
        ),
    )
    latency_sensitive = forms.ChoiceField(choices=LATENCY_CHOICES, required=False, label="Latency-sensitive")
    latency_p99_ms = ProfileNumberField(profile_field="latency_p99_ms", label="Latency p99 (ms)", required=False)
    isolation_required = forms.BooleanField(
        required=False, label="Needs memory and fault isolation", help_text="Rules out time-slicing."
    )
    expected_utilization_pct = ProfileNumberField(
        profile_field="expected_utilization_pct", label="Expected utilization (%)", required=False
    )
    gpu_model = forms.ChoiceField(required=False, label="GPU model", help_text="Leave empty: the portal picks.")

    sla_tier = forms.ModelChoiceField(
        queryset=SlaTier.objects.all(), to_field_name="slug", required=False, empty_label="No tier", label="SLA tier"
    )
    duration_hours = ProfileNumberField(profile_field="duration_hours", label="Duration (hours)", required=False)
    expires_on = forms.DateField(label="or expiry date", required=False, widget=forms.DateInput(attrs={"type": "date"}))

    cluster = forms.ModelChoiceField(
        queryset=Cluster.objects.filter(is_active=True),
        to_field_name="name",
        required=False,
        empty_label="Any cluster",
    )
    image = forms.CharField(
        max_length=255, required=False, label="Container image", help_text="Empty: the default for the workload."
    )
    command = forms.CharField(
        required=False,
        label="Command",
        help_text=(
            "Shell-style, e.g. torchrun train.py --epochs 10, or tritonserver --model-repository=s3://bucket/models. "
            "Required with the default image, which runs nothing by itself; development starts JupyterLab on port "
            "8888 when left empty (its token is in the pod's log). With an image of your own, empty runs its "
            "entrypoint."
        ),
    )
    # One-time token of this form page: a second post of the same page lands on the request it made
    # (allocations.requests.form_submissions.form_submission_claim).
    submission_token = forms.UUIDField(required=False, widget=forms.HiddenInput)
    # Offered once the team already has an open request of the name typed (the service's refusal on ``name``).
    submit_duplicate = forms.BooleanField(required=False, label="Submit another request of this name anyway")
    offer_duplicate = False
    # (quota id, units short) of a quota refusal, for its next steps.
    quota_refusal: tuple[int, int] | None = None

    def __init__(self, *args: Any, user: AbstractBaseUser, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams_of(user).order_by("name")
        models = GpuModel.objects.order_by("name").values_list("name", flat=True)
        self.fields["gpu_model"].choices = [("", "Any (the portal picks)"), *((m, m) for m in models)]

    def clean_command(self) -> list[str]:
        value = self.cleaned_data.get("command") or ""
        try:
            return shlex.split(value)
        except ValueError as exc:
            raise ValidationError(f"Cannot split the command: {exc}.") from exc

    def clean_expires_on(self) -> Any:
        value = self.cleaned_data.get("expires_on")
        if value is not None and value <= timezone.localdate():
            raise ValidationError("The expiry date must be after today.")
        return value

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if cleaned.get("duration_hours") is not None and cleaned.get("expires_on") is not None:
            self.add_error("expires_on", "Give a duration or an expiry date, not both.")
        return cleaned

    def profile_data(self) -> dict[str, Any]:
        """The workload profile as the decision framework reads it (blank optional fields left out, replicas
        defaulted by the tier)."""
        data: dict[str, Any] = {}
        for name in PROFILE_FIELDS:
            value = self.cleaned_data.get(name)
            if name == "sla_tier":
                value = value.slug if value is not None else None
            elif name == "latency_sensitive":
                value = {"true": True, "false": False}.get(value or "")
            if value not in (None, ""):
                data[name] = value
        return with_default_replicas(data)

    def expires_at(self) -> datetime | None:
        """The expiry as an aware datetime: the start of the day after the chosen date, in the portal's time zone."""
        day = self.cleaned_data.get("expires_on")
        if day is None:
            return None
        return timezone.make_aware(datetime.combine(day + timedelta(days=1), time.min))

    def service_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``gpu_request_submit`` (the acting user is the caller's)."""
        data = self.cleaned_data
        return {
            "team": data["team"],
            "name": data["name"],
            "purpose": data.get("purpose", ""),
            "profile_data": self.profile_data(),
            "cluster": data.get("cluster"),
            "expires_at": self.expires_at(),
            "image": data.get("image", ""),
            "command": data.get("command") or [],
            "refuse_open_duplicate": not data.get("submit_duplicate"),
        }

    def add_service_errors(self, error: ValidationError) -> None:
        """Show a service's ValidationError on the fields it names; quota and unknown keys become form errors."""
        if not hasattr(error, "error_dict"):
            self.add_error(None, error)
            return
        # A quota that refused: the page offers the next steps (ask for more, borrow, wait).
        refusal = next((e for e in error.error_dict.get("quota", []) if getattr(e, "quota_id", None)), None)
        self.quota_refusal = (refusal.quota_id, refusal.shortfall) if refusal is not None else None
        # A second open request of the same name: the next post may confirm it.
        self.offer_duplicate = any(e.code == OPEN_DUPLICATE for e in error.error_dict.get("name", []))
        for field, messages in error.message_dict.items():
            target = {"expires_at": "expires_on"}.get(field, field)
            for message in messages:
                self.add_error(target if target in self.fields else None, message)


class RecommendationPreviewForm(GpuRequestForm):
    """The new-request form's profile, team and cluster only: what the live preview recommends from."""

    # Not part of the recommendation: the preview neither needs nor checks them.
    NOT_PREVIEWED = ("name", "purpose", "expires_on", "image", "command")

    def __init__(self, *args: Any, user: AbstractBaseUser, **kwargs: Any) -> None:
        super().__init__(*args, user=user, **kwargs)
        for name in self.NOT_PREVIEWED:
            del self.fields[name]


class CommentForm(forms.Form):
    """An optional comment on a status change (required by the service to reject)."""

    comment = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


class ReviewForm(CommentForm):
    """Approve or reject one request."""

    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])


class BulkReviewForm(ReviewForm):
    """Approve or reject several pending requests with one comment."""

    ids = forms.TypedMultipleChoiceField(coerce=int, choices=[], error_messages={"required": "Tick some requests."})

    def __init__(self, *args: Any, pending_ids: list[int], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["ids"].choices = [(pk, str(pk)) for pk in pending_ids]
        self.fields["ids"].error_messages["invalid_choice"] = (
            "Request %(value)s is no longer pending: reload the queue."
        )


class ExtensionRequestForm(forms.Form):
    """Ask for more hours on an allocation: how many, and why (the service decides whether it may be asked)."""

    hours = forms.DecimalField(
        label="Hours to add",
        min_value=Decimal("0.01"),
        max_value=MAX_EXTENSION_HOURS,
        # No max_digits: the maximum above says it once (1000 would also break "3 digits before the point").
        decimal_places=2,
        help_text="At most 720 (30 days).",
    )
    reason = forms.CharField(max_length=5000, widget=forms.Textarea(attrs={"rows": 2}))
