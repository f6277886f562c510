"""``Idempotency-Key`` on submissions: a retry with the same key gets the first answer instead of a second request.

A client that lost the answer to a POST (the connection dropped, the database restarted after the commit) cannot tell
whether its request was created. Sent with an ``Idempotency-Key`` header, the POST's first successful answer is stored
with the key in the transaction that creates the object; the same user sending the same key again within
``IDEMPOTENCY_KEY_TTL_HOURS`` gets that answer back, unchanged, and nothing new is created. The same key with a
different body is refused (``IdempotencyKeyReused``, 422): it is a client bug. A refused submission (400) stores
nothing, so it may be corrected and sent again with the same key. Keys are per user and per endpoint.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, transaction
from django.utils import timezone

from allocations.models import IdempotencyKey

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
KEY_PATTERN = rf"^[ -~]{{1,{MAX_KEY_LENGTH}}}$"  # printable ASCII, as the schema states it


class IdempotencyKeyReused(Exception):
    """The key was first sent with a different body."""


class IdempotencyKeyTaken(Exception):
    """Another request with the same key committed while this one ran: the caller rolls back and replays that one."""


def key_from_header(value: str | None) -> str | None:
    """The key sent (None when there is none); ValidationError naming the header for an unusable one."""
    if value is None:
        return None
    if not re.fullmatch(KEY_PATTERN, value):
        raise ValidationError({HEADER: [f"Give 1 to {MAX_KEY_LENGTH} printable ASCII characters, e.g. a UUID."]})
    return value


def body_digest(body: Any) -> str:
    """A digest of the request's body that does not depend on the order of its keys."""
    if hasattr(body, "lists"):  # a form's QueryDict
        body = dict(body.lists())
    canonical = json.dumps(body, sort_keys=True, cls=DjangoJSONEncoder, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _expired_before() -> Any:
    return timezone.now() - timedelta(hours=settings.IDEMPOTENCY_KEY_TTL_HOURS)


def stored_answer(*, user: AbstractBaseUser, endpoint: str, key: str, digest: str) -> tuple[int, str] | None:
    """The status and JSON text first answered to this key, or None (never sent, or expired: then it is forgotten)."""
    row = IdempotencyKey.objects.filter(user=user, endpoint=endpoint, key=key).first()
    if row is None:
        return None
    if row.created_at < _expired_before():
        row.delete()
        return None
    if row.body_digest != digest:
        raise IdempotencyKeyReused(
            f"This {HEADER} was first sent with a different body; use a new key for a different request."
        )
    return row.response_status, row.response_body


def remember_answer(*, user: AbstractBaseUser, endpoint: str, key: str, digest: str, status: int, body: Any) -> None:
    """Store the answer, inside the caller's transaction; IdempotencyKeyTaken if the key was stored meanwhile."""
    try:
        with transaction.atomic():  # a savepoint: the failed insert leaves the caller's transaction usable
            IdempotencyKey.objects.create(
                user=user,
                endpoint=endpoint,
                key=key,
                body_digest=digest,
                response_status=status,
                response_body=body,
                created_at=timezone.now(),
            )
    except IntegrityError as exc:
        raise IdempotencyKeyTaken(key) from exc


def purge_expired_idempotency_keys() -> int:
    """Delete the keys past ``IDEMPOTENCY_KEY_TTL_HOURS``; the number deleted."""
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=_expired_before()).delete()
    return deleted
