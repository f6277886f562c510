"""Browser actions and charts of utilization: acknowledge or mute a GPU's alerts of one rule (POST, CSRF, audited).

Thin: the scope comes from ``teams_visible_to`` (another team's is a 404), the rule from the service
(``billing.utilization.services``), which refuses with the reason (the 403 page shows it).
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from allocations.models import Cluster
from allocations.selectors import teams_visible_to
from billing.utilization.services import alert_acknowledgement_update

ACTIONS = {"acknowledge": None, "mute:24": 24, "mute:168": 168, "unmute": None}


class AlertActionForm(forms.Form):
    """One alert group (cluster, GPU, rule) in one scope (a team's slug, or empty for the fleet) and what to do."""

    scope = forms.SlugField(required=False)
    cluster = forms.CharField(max_length=100)
    device = forms.CharField(max_length=100)
    kind = forms.CharField(max_length=32)
    through = forms.DateTimeField(required=False)
    action = forms.ChoiceField(choices=[(key, key) for key in ACTIONS])
    next = forms.CharField(required=False, max_length=500)


@login_required
@require_POST
def alert_action(request: HttpRequest) -> HttpResponse:
    """Acknowledge, mute (24 h or 7 days) or unmute one GPU's alerts of one rule, then go back to the page."""
    form = AlertActionForm(request.POST)
    if not form.is_valid():
        first = next(iter(form.errors.items()))
        raise BadRequest(f"{first[0]}: {' '.join(first[1])}")
    data = form.cleaned_data
    team = get_object_or_404(teams_visible_to(request.user), slug=data["scope"]) if data["scope"] else None
    cluster = get_object_or_404(Cluster, name=data["cluster"])
    action, _, _ = data["action"].partition(":")
    try:
        alert_acknowledgement_update(
            acting_user=request.user,
            team=team,
            cluster=cluster,
            device=data["device"],
            kind=data["kind"],
            action=action,
            through=data["through"],
            mute_hours=ACTIONS[data["action"]],
        )
    except ValidationError as exc:
        raise BadRequest(" ".join(exc.messages)) from exc
    done = {"acknowledge": "acknowledged", "mute": "muted", "unmute": "unmuted"}[action]
    messages.success(request, f"Alerts of {data['device'][:24]} ({data['kind'].replace('_', ' ')}) {done}.")
    target = data["next"]
    if not target or not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "/"
    return redirect(target)
