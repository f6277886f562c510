"""``Authorization: Token <key>`` for named tokens (legacy DRF keys were migrated to them), behind the failure brake."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.request import Request

from infra.throttling import FailureThrottledTokenAuthentication, client_ip
from portal.tokens.services import api_token_authenticate


class NamedTokenAuthentication(FailureThrottledTokenAuthentication):
    """A ``gpp_`` key is a named token (hashed, expiring, revocable); any other key may be a migrated legacy key.

    Both go through ``FailureThrottledTokenAuthentication``: a wrong, expired or revoked key counts as a failed
    attempt of the client's address and of the key's prefix (``gpp_<public id>``); a valid key is always served.
    """

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        self._client_ip = client_ip(request._request)
        return super().authenticate(request)

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        # Named keys and the legacy keys migrated from DRF's plain-text table (hashed, expiring); that table is
        # never read.
        token = api_token_authenticate(key=key, client_ip=getattr(self, "_client_ip", None) or None)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid, expired or revoked token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return token.user, token
