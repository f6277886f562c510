"""The social-auth pipeline step that applies the groups claim to team memberships and platform groups at login."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from social_core.backends.open_id_connect import OpenIdConnectAuth

from portal.group_claims import groups_from_claims
from portal.sso.services import sso_groups_apply


def apply_group_mappings(backend: Any, user: Any = None, response: Any = None, *args: Any, **kwargs: Any) -> None:
    """On every OIDC login: read the groups from the validated ID token (or UserInfo) and apply the mapping."""
    if user is None or not isinstance(backend, OpenIdConnectAuth):
        return
    groups = groups_from_claims(id_token=backend.id_token, userinfo=response, claim=settings.OIDC_GROUPS_CLAIM)
    sso_groups_apply(user=user, groups=groups)
