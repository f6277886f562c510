"""Authentication backends: the generic OIDC backend configured from settings, and password login with its policy."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser, Permission
from django.core.exceptions import ImproperlyConfigured
from django.http import Http404, HttpRequest
from social_core.backends.open_id_connect import OpenIdConnectAuth
from social_core.exceptions import AuthConfigurationError

from infra.reference_cache import PERMISSIONS, cached
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
    """Django's username and password check under the ``PASSWORD_LOGIN`` policy; permissions as ModelBackend's.

    A user's own and their groups' permissions are kept in the reference cache (family ``PERMISSIONS``: a change of
    a group, a permission or a membership replaces its token), so a page or API call does not read them with two
    queries each time. Inactive, anonymous and superusers, and object permissions, go to ModelBackend as they are.
    """

    def get_user_permissions(self, user_obj: AbstractBaseUser | AnonymousUser, obj: Any = None) -> set[str]:
        if not self._from_cache(user_obj, obj):
            return super().get_user_permissions(user_obj, obj)
        return set(self._held(user_obj)[0])

    def get_group_permissions(self, user_obj: AbstractBaseUser | AnonymousUser, obj: Any = None) -> set[str]:
        if not self._from_cache(user_obj, obj):
            return super().get_group_permissions(user_obj, obj)
        return set(self._held(user_obj)[1])

    @staticmethod
    def _from_cache(user_obj: AbstractBaseUser | AnonymousUser, obj: Any) -> bool:
        return bool(obj is None and user_obj.is_active and not user_obj.is_anonymous and not user_obj.is_superuser)

    @staticmethod
    def _held(user_obj: AbstractBaseUser) -> tuple[frozenset[str], frozenset[str]]:
        """The user's own permissions and their groups', as ``app_label.codename``."""

        def read() -> tuple[frozenset[str], frozenset[str]]:
            own = Permission.objects.filter(user=user_obj)
            of_groups = Permission.objects.filter(group__user=user_obj)
            return _names(own), _names(of_groups)

        return cached(PERMISSIONS, f"permissions:user:{user_obj.pk}", read)

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


def _names(permissions: Any) -> frozenset[str]:
    rows = permissions.values_list("content_type__app_label", "codename").order_by()
    return frozenset(f"{app_label}.{codename}" for app_label, codename in rows)
