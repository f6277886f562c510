"""Browser pages of request templates: those offered to the user's teams (used from the new-request form), a team
lead saving a request of the team as a template, creating, editing and deleting one (through the services)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from allocations.models import RequestTemplate, WorkloadType
from allocations.request_templates.forms import RequestTemplateForm
from allocations.request_templates.selectors import (
    request_template_manage_refusal,
    request_template_teams_managed,
    request_template_values_of,
    request_templates_offered,
    request_templates_visible_to,
)
from allocations.request_templates.services import request_template_delete, request_template_save
from allocations.selectors import user_is_platform_admin
from allocations.view_helpers import error_text, visible_request


class TemplateNameForm(forms.Form):
    name = forms.CharField(max_length=100, label="Template name")
    description = forms.CharField(max_length=300, required=False)


@login_required
def template_list(request: HttpRequest) -> HttpResponse:
    """The templates offered to the user's teams, each with Use (and Delete for those who manage it)."""
    templates = list(request_templates_offered(user=request.user).order_by("team__name", "name"))
    manages: dict[int | None, bool] = {}  # by team: one check per team, not per template
    for template in templates:
        if template.team_id not in manages:
            manages[template.team_id] = request_template_manage_refusal(user=request.user, team=template.team) is None
    rows = [{"template": t, "manage": manages[t.team_id], "summary": _summary(t.profile)} for t in templates]
    may_create = bool(request_template_teams_managed(user=request.user)) or user_is_platform_admin(request.user)
    return render(request, "allocations/template_list.html", {"rows": rows, "may_create": may_create})


def _summary(profile: dict[str, object]) -> str:
    """One line of a template's profile: workload, memory, GPUs x replicas, hours."""
    kind = profile.get("workload_type")
    parts = [WorkloadType(kind).label if kind in WorkloadType.values else str(kind)]
    parts.append(f"{float(str(profile.get('gpu_memory_gb') or 0)):g} GB per replica")
    gpus, replicas = profile.get("gpu_count") or 1, profile.get("replicas") or 1
    if gpus != 1 or replicas != 1:
        parts.append(f"{gpus} GPU{'s' if gpus != 1 else ''} x {replicas} replica{'s' if replicas != 1 else ''}")
    if profile.get("duration_hours"):
        parts.append(f"{float(str(profile['duration_hours'])):g} h")
    return " · ".join(parts)


@login_required
@require_POST
def template_from_request(request: HttpRequest, pk: int) -> HttpResponse:
    """A lead saves a request's profile, image, command and purpose as a template of its team."""
    gpu_request = visible_request(request, pk)
    form = TemplateNameForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the template a name (100 characters at most).")
        return redirect("allocations:request-detail", pk=pk)
    try:
        template = request_template_save(
            acting_user=request.user,
            team=gpu_request.team,
            name=form.cleaned_data["name"],
            description=form.cleaned_data["description"],
            **request_template_values_of(gpu_request),
        )
    except ValidationError as exc:
        messages.error(request, f"Template not saved: {error_text(exc)}")
        return redirect("allocations:request-detail", pk=pk)
    messages.success(request, f"Saved “{template.name}” as a template of {gpu_request.team.name}.")
    return redirect("allocations:template-list")


@login_required
@require_POST
def template_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Delete a template the user manages (requests made from it are unchanged)."""
    template = request_templates_visible_to(user=request.user).filter(pk=pk).first()
    if template is None:
        raise Http404("No such template among yours.")
    request_template_delete(acting_user=request.user, template=template)
    messages.success(request, f"Template “{template.name}” deleted.")
    return redirect("allocations:template-list")


@login_required
def template_new(request: HttpRequest) -> HttpResponse:
    """A new template from a blank form, for a team the user leads (or every team, for platform admins)."""
    return _template_form(request, None)


@login_required
def template_edit(request: HttpRequest, pk: int) -> HttpResponse:
    """Change a template the user manages; the change is audited (before and after)."""
    template = request_templates_visible_to(user=request.user).filter(pk=pk).first()
    if template is None:
        raise Http404("No such template among yours.")
    refusal = request_template_manage_refusal(user=request.user, team=template.team)
    if refusal:
        raise PermissionDenied(refusal)
    return _template_form(request, template)


def _template_form(request: HttpRequest, template: RequestTemplate | None) -> HttpResponse:
    teams = request_template_teams_managed(user=request.user)
    every_team = user_is_platform_admin(request.user)
    if not teams and not every_team:
        raise PermissionDenied("Only a team's leads and platform admins manage templates.")
    initial = RequestTemplateForm.initial_of(template) if template else {"workload_type": "training"}
    form = RequestTemplateForm(request.POST or None, initial=initial, teams=teams, every_team=every_team)
    if request.method == "POST" and form.is_valid():
        try:
            saved = request_template_save(acting_user=request.user, template=template, **form.values())
        except ValidationError as exc:
            _errors_onto(form, exc)
        else:
            verb = "Saved" if template else "Created"
            messages.success(request, f"{verb} the template “{saved.name}” for {saved.scope_label.lower()}.")
            return redirect(f"{reverse('allocations:template-list')}#template-{saved.pk}")
    status = 400 if request.method == "POST" else 200
    return render(request, "allocations/template_form.html", {"form": form, "template": template}, status=status)


def _errors_onto(form: RequestTemplateForm, exc: ValidationError) -> None:
    """The model's refusals on the form: a duplicate name on ``name``, anything else above the fields."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, error_text(exc))
        return
    for name, errors in exc.error_dict.items():
        text = " ".join(message for error in errors for message in error.messages)
        if name == "__all__" and "name" in text.lower():
            form.add_error("name", "A template of that name is already offered to this team.")
        else:
            form.add_error(name if name in form.fields else None, text)
