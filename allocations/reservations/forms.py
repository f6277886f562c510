"""Browser forms of the reservations page (the services decide what is allowed; these only parse)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils import timezone

from allocations.models import NodePool, Team

WINDOW_INPUT = forms.DateTimeInput(attrs={"type": "datetime-local", "step": 900}, format="%Y-%m-%dT%H:%M")


class ReservationForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    node_pool = forms.ModelChoiceField(queryset=NodePool.objects.none(), label="Node pool", empty_label=None)
    resource_name = forms.CharField(
        max_length=63,
        initial="nvidia.com/gpu",
        label="Resource",
        help_text="nvidia.com/gpu for whole GPUs, or a MIG profile or shared resource the pool offers.",
    )
    quantity = forms.IntegerField(min_value=1, max_value=100000, label="Units")
    start = forms.DateTimeField(widget=WINDOW_INPUT, label="Start (UTC)", input_formats=["%Y-%m-%dT%H:%M"])
    end = forms.DateTimeField(widget=WINDOW_INPUT, label="End (UTC)", input_formats=["%Y-%m-%dT%H:%M"])
    reason = forms.CharField(
        required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}), label="What it is for"
    )

    def __init__(self, *args: Any, teams: list[Team], pools: list[NodePool], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = Team.objects.filter(pk__in=[team.pk for team in teams]).order_by("name")
        self.fields["node_pool"].queryset = NodePool.objects.filter(pk__in=[pool.pk for pool in pools]).select_related(
            "cluster", "gpu_model"
        )
        zone = timezone.get_current_timezone_name()
        self.fields["start"].label, self.fields["end"].label = f"Start ({zone})", f"End ({zone})"
        self.fields["node_pool"].label_from_instance = lambda pool: (
            f"{pool.cluster.name}/{pool.name} · {pool.gpu_model.name} · {pool.gpu_total} GPUs"
        )


class ReservationDecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("decline", "Decline")])
    comment = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
