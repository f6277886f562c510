"""Browser views of a MIG pool's plans: the page, a new plan, and the approve / apply / cancel buttons."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from allocations.clusters.gateways.base import GatewayError
from allocations.mig_plans.pages import mig_pool_page
from allocations.mig_plans.selectors import mig_plans_of_pool, mig_pool_for
from allocations.mig_plans.services import (
    InvalidPlanTransition,
    mig_plan_apply,
    mig_plan_approve,
    mig_plan_cancel,
    mig_plan_create,
    user_is_platform_admin,
)
from allocations.models import DrainPolicy


class MigPlanForm(forms.Form):
    """The settings of a new plan; the demand comes from the pool's requests."""

    headroom_pct = forms.IntegerField(label="Headroom (%)", min_value=0, max_value=500, initial=10)
    max_unavailable = forms.IntegerField(label="Nodes at a time", min_value=1, max_value=1000, initial=1)
    drain_timeout_seconds = forms.IntegerField(label="Drain timeout (s)", min_value=1, initial=3600)
    drain_policy = forms.ChoiceField(label="At the timeout", choices=DrainPolicy.choices, initial=DrainPolicy.STOP)
    nodes = forms.CharField(
        label="Node names",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "gpu-node-1\ngpu-node-2"}),
        help_text="One per line. Needed where the cluster's nodes cannot be read (a GitOps tree).",
    )

    def clean_nodes(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["nodes"].splitlines() if line.strip()]


@login_required
def mig_pool(request: HttpRequest, name: str, pool: str) -> HttpResponse:
    """The pool's MIG page: current vs proposed layouts per node, what it frees or needs, and the rollout."""
    node_pool = mig_pool_for(user=request.user, cluster=name, pool=pool)
    form = MigPlanForm()
    if request.method == "POST":
        form = MigPlanForm(request.POST)
        if form.is_valid():
            try:
                mig_plan_create(acting_user=request.user, pool=node_pool, **form.cleaned_data)
            except ValidationError as error:
                for field, problems in error.message_dict.items():
                    form.add_error(field if field in form.fields else None, problems)
            except GatewayError as error:
                form.add_error(None, f"The cluster could not be read: {error}")
            else:
                messages.success(request, "New MIG plan proposed. A platform admin approves it, then applies it.")
                return redirect("allocations:mig-pool", name=name, pool=pool)
    context = mig_pool_page(pool=node_pool, user_is_admin=user_is_platform_admin(request.user))
    context["form"] = form
    return render(request, "allocations/mig_pool.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def mig_plan_action(request: HttpRequest, name: str, pool: str, pk: int, action: str) -> HttpResponse:
    """Approve, apply or cancel the plan (platform admins); back to the page with what happened."""
    node_pool = mig_pool_for(user=request.user, cluster=name, pool=pool)
    plan = get_object_or_404(mig_plans_of_pool(pool=node_pool), pk=pk)
    calls = {"approve": mig_plan_approve, "cancel": mig_plan_cancel}
    try:
        if action == "apply":
            mig_plan_apply(plan_=plan, acting_user=request.user)
            messages.success(request, "Rollout started: nodes are reconfigured one batch at a time.")
        elif action in calls:
            calls[action](plan_=plan, acting_user=request.user, comment=request.POST.get("comment", ""))
            messages.success(request, f"Plan {plan.pk}: {action} done.")
        else:
            raise PermissionDenied(f"Unknown action {action!r}.")
    except InvalidPlanTransition as error:
        messages.error(request, str(error))
    return redirect("allocations:mig-pool", name=name, pool=pool)
