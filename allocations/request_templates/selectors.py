"""Reads of request templates: which a user may see and use, who may manage them, and the form values of one."""

from __future__ import annotations

import shlex

from django.db.models import Q, QuerySet

from allocations.models import GpuRequest, RequestTemplate, Role, Team
from allocations.selectors import User, membership_role, teams_of, teams_visible_to, user_is_platform_admin


def request_templates_visible_to(*, user: User) -> QuerySet[RequestTemplate]:
    """Organisation-wide templates, and those of the teams the user may see; anonymous users none."""
    if not user.is_authenticated:
        return RequestTemplate.objects.none()
    return RequestTemplate.objects.filter(
        Q(team__isnull=True) | Q(team__in=teams_visible_to(user).values("pk"))
    ).select_related("team")


def request_templates_offered(*, user: User, team: Team | None = None) -> QuerySet[RequestTemplate]:
    """The templates the new-request form offers: organisation-wide ones and those of the user's own teams (of
    ``team`` only, when given)."""
    if not user.is_authenticated:
        return RequestTemplate.objects.none()
    own = teams_of(user).values("pk") if team is None else [team.pk]
    return RequestTemplate.objects.filter(Q(team__isnull=True) | Q(team__in=own)).select_related("team")


def request_template_manage_refusal(*, user: User, team: Team | None) -> str | None:
    """Why ``user`` may not create, change or delete a template of ``team`` (None: organisation-wide), or None.

    Platform admins manage every template; a team's leads manage that team's."""
    if user_is_platform_admin(user):
        return None
    if team is None:
        return "Only platform admins manage templates offered to every team."
    if membership_role(user=user, team=team) != Role.LEAD:
        return f"Only leads of team {team.name} and platform admins manage its templates."
    return None


def request_template_teams_managed(*, user: User) -> list[Team]:
    """The teams whose templates ``user`` manages: every team for platform admins, else those they lead."""
    if user_is_platform_admin(user):
        return list(Team.objects.order_by("name"))
    if not user.is_authenticated:
        return []
    return list(Team.objects.filter(memberships__user_id=user.pk, memberships__role=Role.LEAD).order_by("name"))


def request_template_form_initial(template: RequestTemplate) -> dict[str, object]:
    """The new-request form's values from a template (the fields it leaves out keep the form's defaults)."""
    profile = dict(template.profile)
    latency = profile.pop("latency_sensitive", None)
    initial: dict[str, object] = {
        **{key: value for key, value in profile.items() if value is not None and key != "gpu_model"},
        "gpu_model": profile.get("gpu_model") or "",
        "purpose": template.purpose,
        "image": template.image,
        "command": shlex.join(template.command or []),
    }
    if latency is not None:
        initial["latency_sensitive"] = "true" if latency else "false"
    if template.team_id:
        initial["team"] = template.team.slug
    return initial


def request_template_request_values(template: RequestTemplate) -> dict[str, object]:
    """A template's values as the requests API takes them (a request body's fields override each)."""
    values: dict[str, object] = {key: value for key, value in template.profile.items() if value is not None}
    for name in ("purpose", "image"):
        if getattr(template, name):
            values[name] = getattr(template, name)
    if template.command:
        values["command"] = list(template.command)
    return values


def request_template_values_of(request: GpuRequest) -> dict[str, object]:
    """A request's profile, purpose, image and command as a template's values (``request_template_save``)."""
    profile: dict[str, object] = {
        "workload_type": request.workload_type,
        "gpu_memory_gb": float(request.gpu_memory_gb),
        "gpu_count": request.gpu_count,
        "replicas": request.replicas,
        "latency_sensitive": request.latency_sensitive,
        "isolation_required": request.isolation_required,
    }
    optional = {
        "latency_p99_ms": request.latency_p99_ms,
        "expected_utilization_pct": request.expected_utilization_pct,
        "duration_hours": request.duration_hours,
    }
    profile.update({name: float(value) for name, value in optional.items() if value is not None})
    if request.sla_tier_id:
        profile["sla_tier"] = request.sla_tier.slug
    if request.gpu_model_requested:
        profile["gpu_model"] = request.gpu_model_requested
    return {"profile": profile, "purpose": request.purpose, "image": request.image, "command": list(request.command)}
