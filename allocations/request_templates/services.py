"""Writes of request templates: create, change and delete, by platform admins (any) and team leads (their team's),
each audited."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction

from allocations.models import RequestTemplate, Team
from allocations.request_templates.selectors import request_template_manage_refusal
from audit.services import audit_record, audit_snapshot

EDITABLE_FIELDS = ("name", "description", "team", "profile", "purpose", "image", "command")


def _require_may_manage(user: AbstractBaseUser, team: Team | None) -> None:
    refusal = request_template_manage_refusal(user=user, team=team)
    if refusal:
        raise PermissionDenied(refusal)


def request_template_save(
    *, acting_user: AbstractBaseUser, template: RequestTemplate | None = None, **values: Any
) -> RequestTemplate:
    """Create a template (``template`` None) or change one; ``values`` are its editable fields. The user must manage
    templates of the team it had and of the team it gets. Raises ValidationError naming the field."""
    unknown = set(values) - set(EDITABLE_FIELDS)
    if unknown:
        raise TypeError(f"Not editable: {', '.join(sorted(unknown))}.")
    with transaction.atomic():
        if template is None:
            template = RequestTemplate(created_by=acting_user if acting_user.is_authenticated else None)
            before = None
        else:
            template = RequestTemplate.objects.select_for_update().get(pk=template.pk)
            _require_may_manage(acting_user, template.team)
            before = audit_snapshot(template)
        for name, value in values.items():
            setattr(template, name, value)
        _require_may_manage(acting_user, template.team)
        template.full_clean()
        template.save()
        audit_record(actor=acting_user, obj=template, before=before)
    return template


def request_template_delete(*, acting_user: AbstractBaseUser, template: RequestTemplate) -> None:
    """Delete a template (new requests no longer offer it; requests made from it are unchanged)."""
    with transaction.atomic():
        _require_may_manage(acting_user, template.team)
        audit_record(actor=acting_user, obj=template, before=None, deleted=True)
        template.delete()
