"""Record audited writes (``audit_record``) and prune old events (``audit_events_prune``).

Call ``audit_record`` from the service that writes, inside its ``transaction.atomic()`` block, right after the save
(or before the delete): the event commits or rolls back with the write, so the trail never shows a change that did not
happen nor misses one that did. Take ``before = audit_snapshot(obj)`` before changing the object.

    before = audit_snapshot(plan)          # None when creating
    ... change and save plan ...
    audit_record(actor=acting_user, obj=plan, before=before)
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models, transaction
from django.utils import timezone

from audit.context import current_context
from audit.models import AuditAction, AuditEvent

# Fields that hold or name a secret (a chat webhook URL carries its token): recorded as a fingerprint, so a change
# shows without the value.
SECRET_FIELD_SUFFIXES = ("secret_ref", "password", "digest", "webhook_url")
SECRET_FIELD_NAMES = {"key"}  # DRF's authtoken: the key itself
PRUNE_BATCH = 5000


def _fingerprint(value: Any) -> str:
    if value in (None, ""):
        return ""
    return "sha256:" + hashlib.sha256(str(value).encode()).hexdigest()[:12]


def audit_snapshot(obj: models.Model | None) -> dict[str, Any] | None:
    """The object's concrete field values as JSON-ready data (foreign keys as ids, secrets as fingerprints)."""
    if obj is None:
        return None
    values: dict[str, Any] = {}
    for field in obj._meta.concrete_fields:
        if getattr(field, "auto_now", False):  # "updated_at" changes with every save: noise in a diff
            continue
        if field.generated:  # the database's copy of other fields (a request's spec as text)
            continue
        value = field.value_from_object(obj)
        if field.name.endswith(SECRET_FIELD_SUFFIXES) or field.name in SECRET_FIELD_NAMES:
            value = _fingerprint(value)
        values[field.attname] = value
    return json.loads(json.dumps(values, cls=DjangoJSONEncoder))


def _changes(before: dict[str, Any], after: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    return {n: before.get(n) for n in changed}, {n: after.get(n) for n in changed}


def audit_record(
    *,
    actor: AbstractBaseUser | None,
    obj: models.Model,
    before: dict[str, Any] | None,
    deleted: bool = False,
    actor_label: str = "",
    comment: str = "",
    after: dict[str, Any] | None = None,
) -> AuditEvent | None:
    """Record a write to ``obj``: created (``before`` None), changed, or ``deleted``; None when nothing changed.

    ``after`` replaces the object's snapshot when the change is not in its own fields (a user's groups).

    ``actor`` is the user who acted (None for the system: then ``actor_label`` says which part, e.g. ``sso``); the
    origin (browser, API, admin, task) and the client address come from the current audit context.
    """
    if deleted:
        action, old, new = AuditAction.DELETE, before or audit_snapshot(obj), None
    elif before is None:
        action, old, new = AuditAction.CREATE, None, audit_snapshot(obj)
    else:
        action = AuditAction.UPDATE
        old, new = _changes(before, after if after is not None else audit_snapshot(obj) or {})
        if not new and not old:
            return None
    origin = current_context()
    authenticated = actor is not None and actor.is_authenticated
    label = actor.get_username() if authenticated else (actor_label or origin.detail or origin.source)
    return AuditEvent.objects.create(
        actor=actor if authenticated else None,
        actor_label=label[:150],
        source=origin.source,
        source_detail=origin.detail,
        ip=origin.ip,
        action=action,
        object_type=obj._meta.label_lower,
        object_id=str(obj.pk if obj.pk is not None else (before or {}).get("id", "")),
        object_repr=str(obj)[:200],
        before=old,
        after=new,
        comment=comment[:500],
    )


def audit_events_prune(*, now: Any = None) -> int:
    """Delete events older than ``AUDIT_RETENTION_DAYS`` (0 keeps everything), in batches; returns how many."""
    days = int(getattr(settings, "AUDIT_RETENTION_DAYS", 0) or 0)
    if days <= 0:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    total = 0
    while True:
        with transaction.atomic():
            ids = list(AuditEvent.objects.filter(at__lt=cutoff).values_list("pk", flat=True)[:PRUNE_BATCH])
            if not ids:
                return total
            total += AuditEvent.objects.filter(pk__in=ids).delete()[0]
