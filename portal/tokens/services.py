"""Create, revoke and check named API tokens; every write is scoped to the acting user's own tokens."""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit.services import audit_record, audit_snapshot
from portal.tokens.legacy import legacy_public_id
from portal.tokens.models import KEY_PREFIX, ApiToken, key_digest

EXPIRY_DAYS = (7, 30, 90, 365)
MAX_EXPIRY_DAYS = max(EXPIRY_DAYS)
# Writing last_used_at on every call would turn each API read into a write; a minute's resolution is enough.
LAST_USED_RESOLUTION = timedelta(seconds=60)


@dataclass(frozen=True)
class NewToken:
    """A token just created and its key, which exists only here: the database keeps the digest."""

    token: ApiToken
    key: str


def api_tokens_of(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's own tokens, newest first (every token page and endpoint starts here)."""
    if not user.is_authenticated:
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=user)


def api_token_create(*, acting_user: AbstractBaseUser, name: str, expires_in_days: int) -> NewToken:
    """Create a named token for the acting user, valid ``expires_in_days`` days; the key is returned once."""
    name = (name or "").strip()
    errors: dict[str, str] = {}
    if not name:
        errors["name"] = "Give the token a name that says where it is used."
    elif len(name) > 100:
        errors["name"] = "At most 100 characters."
    if not isinstance(expires_in_days, int) or not 1 <= expires_in_days <= MAX_EXPIRY_DAYS:
        errors["expires_in_days"] = f"Between 1 and {MAX_EXPIRY_DAYS} days."
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        if api_tokens_of(user=acting_user).filter(name=name, revoked_at__isnull=True).exists():
            raise ValidationError({"name": f"You already have a token named {name!r}; revoke it or pick another."})
        public_id = secrets.token_hex(6)
        key = f"{KEY_PREFIX}{public_id}_{secrets.token_urlsafe(32)}"
        token = ApiToken(
            user=acting_user,
            name=name,
            public_id=public_id,
            digest=key_digest(key),
            expires_at=timezone.now() + timedelta(days=expires_in_days),
        )
        token.full_clean()
        token.save()
        audit_record(actor=acting_user, obj=token, before=None)
    return NewToken(token=token, key=key)


def api_token_revoke(*, acting_user: AbstractBaseUser, token_id: int, presented: ApiToken | None = None) -> ApiToken:
    """Revoke one of the acting user's tokens at once (another user's token does not exist for them).

    ``presented``: the token the call came with. It may not revoke itself: a caller holding only a leaked key could
    otherwise make the owner's notebook fail; the owner revokes it from the browser or with another token.
    """
    if presented is not None and presented.pk == token_id:
        raise PermissionDenied("A token cannot revoke itself: revoke it on the tokens page or with another token.")
    with transaction.atomic():
        token = api_tokens_of(user=acting_user).select_for_update().get(pk=token_id)
        if token.revoked_at is None:
            before = audit_snapshot(token)
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit_record(actor=acting_user, obj=token, before=before)
    return token


def api_token_authenticate(*, key: str, client_ip: str | None) -> ApiToken | None:
    """The usable token this key belongs to, recording its use; None for a wrong, revoked or expired key."""
    if key.startswith(KEY_PREFIX):
        public_id, _, secret = key.removeprefix(KEY_PREFIX).partition("_")
        if not public_id or not secret:
            return None
    else:  # a legacy key migrated from DRF's table (portal.tokens.legacy)
        public_id = legacy_public_id(key)
    try:
        # The token and its user in one query: every named-token call needs both.
        token = ApiToken.objects.select_related("user").get(public_id=public_id)
    except ApiToken.DoesNotExist:
        return None
    # Compare digests in constant time, so response times say nothing about how much of a key was right.
    if not hmac.compare_digest(token.digest, key_digest(key)) or not token.is_usable:
        return None
    now = timezone.now()
    if (
        token.last_used_at is None
        or now - token.last_used_at >= LAST_USED_RESOLUTION
        or token.last_used_ip != client_ip
    ):
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now, last_used_ip=client_ip or None)
        token.last_used_at, token.last_used_ip = now, client_ip or None
    return token
