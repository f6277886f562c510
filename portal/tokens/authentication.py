"""``Authorization: Token <key>`` for named tokens and for DRF's legacy per-user tokens, behind the failure brake."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authtoken.models import Token
from rest_framework.request import Request

from allocations.compiled_reads import CompiledRead
from allocations.user_permissions import keep_held_permissions, with_held_permissions
from infra.throttling import FailureThrottledTokenAuthentication, client_ip
from portal.tokens.models import KEY_PREFIX
from portal.tokens.services import api_token_authenticate

# DRF's query for a legacy key (TokenAuthentication.authenticate_credentials), compiled once
# (allocations/compiled_reads.py), with the user's permissions (the approver check of every call).
_LEGACY_TOKEN = CompiledRead(
    Token, lambda key: with_held_permissions(Token.objects.select_related("user").filter(key=key), user_id="user_id")
)


class NamedTokenAuthentication(FailureThrottledTokenAuthentication):
    """A ``gpp_`` key is a named token (hashed, expiring, revocable); any other key is a DRF authtoken, as before.

    Both go through ``FailureThrottledTokenAuthentication``: a wrong, expired or revoked key counts as a failed
    attempt of the client's address.
    """

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        self._client_ip = client_ip(request._request)
        return super().authenticate(request)

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        if not key.startswith(KEY_PREFIX):
            # DRF's check and messages, with the query compiled once (the key is the table's primary key).
            legacy = _LEGACY_TOKEN.first(key)
            if legacy is None:
                raise exceptions.AuthenticationFailed(_("Invalid token."))
            if not legacy.user.is_active:
                raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
            keep_held_permissions(legacy.user, legacy)
            return legacy.user, legacy
        token = api_token_authenticate(key=key, client_ip=getattr(self, "_client_ip", None) or None)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid, expired or revoked token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token
