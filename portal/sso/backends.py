"""Authentication backends: the generic OIDC backend configured from settings, and password login with its policy."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpRequest
from social_core.backends.open_id_connect import OpenIdConnectAuth
from social_core.exceptions import AuthConfigurationError

from allocations.compiled_reads import ID_STAND_IN, CompiledRead, fits_bigint
from allocations.user_permissions import keep_held_permissions, with_held_permissions
from portal.sessions import NOT_READ, user_read_with_session
from portal.settings.env import secret_from_ref

PASSWORD_LOGIN_CHOICES = ("on", "admins", "off")


# The signed-in user (django.contrib.auth.get_user) when the session's read did not bring it: SQL compiled once per
# process and prepared on PostgreSQL, 0.17 ms where the ORM's get() took 0.48 ms (issue #15). Active users only, as
# both backends answer: ModelBackend refuses an inactive user, social-auth reads active users only. The user's
# permissions come in the same read (the approver check of every page).
_ACTIVE_USER = CompiledRead(
    get_user_model(),
    lambda pk: with_held_permissions(get_user_model()._default_manager.filter(pk=pk, is_active=True)),
    stand_in=ID_STAND_IN,
)


def active_user(user_id: Any) -> AbstractBaseUser | None:
    """The active user with this primary key, or None (a key that is no integer included)."""
    if type(user_id) is not int:
        try:
            user_id = int(user_id)
        except (TypeError, ValueError):
            return None
    if not fits_bigint(user_id):
        return None
    # Signing a request in: the user read with its session's row when that row named this user (portal.sessions).
    user = user_read_with_session(user_id)
    if user is not NOT_READ:
        return user
    user = _ACTIVE_USER.first(user_id)
    if user is not None:
        keep_held_permissions(user)
    return user


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

    def get_user(self, user_id: Any) -> AbstractBaseUser | None:
        # social-auth's storage reads the active user with this key (SOCIAL_AUTH_ACTIVE_USERS_FILTER unset here).
        if getattr(settings, "SOCIAL_AUTH_ACTIVE_USERS_FILTER", {"is_active": True}) != {"is_active": True}:
            return super().get_user(user_id)
        return active_user(user_id) if user_id else None

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

    def get_user(self, user_id: Any) -> AbstractBaseUser | None:
        # ModelBackend's: the user with this key, if active (user_can_authenticate).
        return active_user(user_id)
