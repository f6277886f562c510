"""Turns a failed single sign-on into a message on the login page instead of an error page."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest
from social_django.middleware import SocialAuthExceptionMiddleware


class SsoErrorMiddleware(SocialAuthExceptionMiddleware):
    """social-auth's middleware (it logs the details) with a message that says what to do next."""

    def get_message(self, request: HttpRequest, exception: Exception) -> str:
        reason = str(exception).rstrip(".")
        return (
            f"Sign-in with {settings.OIDC_PROVIDER_NAME} did not complete: {reason}. Try again; if it keeps failing, "
            "ask your platform team (the portal's log has the details)."
        )
