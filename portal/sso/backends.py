"""Authentication backends: the generic OIDC backend configured from settings, and password login with its policy."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpRequest
from social_core.backends.open_id_connect import OpenIdConnectAuth
from social_core.exceptions import AuthConfigurationError

from portal.settings.env import secret_from_ref

PASSWORD_LOGIN_CHOICES = ("on", "admins", "off")


def sso_enabled() -> bool:
    """Whether single sign-on is configured (an issuer and a client id)."""
    return bool(settings.OIDC_ISSUER and settings.OIDC_CLIENT_ID)


def password_login() -> str:
    """Who may sign in with a local password: ``on`` (anyone), ``admins`` (staff only: break-glass), ``off``.

    Unset, it follows single sign-on: with SSO configured passwords are for break-glass administrators only.
    """
    return settings.PASSWORD_LOGIN or ("admins" if sso_enabled() else "on")


class PortalOpenIdConnect(OpenIdConnectAuth):
    """social-auth's generic OIDC backend, configured from our settings (issuer discovery, client, secret reference).

    Reading the settings on every use (not at import) lets a rotated secret file take effect without a restart.
    """

    name = "oidc"

    def oidc_endpoint(self) -> str:
        return settings.OIDC_ISSUER.rstrip("/")

    def get_key_and_secret(self) -> tuple[str, str]:
        secret = ""
        if settings.OIDC_CLIENT_SECRET_REF:
            try:
                secret = secret_from_ref(settings.OIDC_CLIENT_SECRET_REF, what="OIDC_CLIENT_SECRET_REF")
            except ImproperlyConfigured as error:
                # The detail (which variable or file) goes to the log; the person signing in gets a plain message.
                raise AuthConfigurationError(
                    self, str(error), code="missing_setting", parameter="OIDC_CLIENT_SECRET_REF", stage="token_exchange"
                ) from error
        return settings.OIDC_CLIENT_ID, secret

    def get_scope(self) -> list[str]:
        scopes = list(settings.OIDC_SCOPES)
        return scopes if "openid" in scopes else ["openid", *scopes]

    def start(self) -> Any:
        if not sso_enabled():
            raise Http404("Single sign-on is not configured (OIDC_ISSUER and OIDC_CLIENT_ID).")
        return super().start()


class PasswordBackend(ModelBackend):
    """Django's username and password check under the ``PASSWORD_LOGIN`` policy; permissions work as ModelBackend's."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> AbstractBaseUser | None:
        policy = password_login()
        if policy == "off":
            return None
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            return None
        if policy == "admins" and not (user.is_staff or user.is_superuser):
            return None
        return user
