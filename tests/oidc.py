"""A real OpenID Connect provider on loopback for the single sign-on tests (oidc-provider-mock, from PyPI).

It is a complete provider (discovery, authorization with PKCE and nonce, token endpoint, signed ID tokens, JWKS,
UserInfo) whose users and claims a test sets with ``set_user``; nothing of ours is replaced. The test client drives
the browser's part of the flow (``sign_in``); the browser tests use Chromium instead.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import requests

CLIENT_ID = "gpu-portal"
CLIENT_SECRET = "test-client-secret-from-a-reference"
SECRET_VARIABLE = "TEST_OIDC_CLIENT_SECRET"


class OidcProvider:
    """The provider's base URL (also its issuer), and what a test does with it."""

    def __init__(self, url: str) -> None:
        self.url = url

    def set_user(self, sub: str, **claims: Any) -> None:
        """Create or replace a user with exactly these claims (``groups`` left out means no groups claim at all)."""
        response = requests.put(f"{self.url}/users/{sub}", json=claims, timeout=10)
        response.raise_for_status()

    def settings(self) -> dict[str, Any]:
        """The portal settings that point single sign-on at this provider (the secret through a reference)."""
        return {
            "OIDC_ISSUER": self.url,
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET_REF": f"env:{SECRET_VARIABLE}",
        }

    def sign_in(self, client: Any, sub: str, *, deny: bool = False) -> Any:
        """Run the whole login as a browser would: begin (POST), authorize at the provider, complete; the last answer.

        The provider's consent form is posted with ``requests`` (the provider is a real HTTP server); the portal's
        side goes through the Django test client, so its session carries the state and PKCE verifier.
        """
        begin = client.post("/accounts/sso/login/oidc/")
        assert begin.status_code == 302, begin
        authorize = begin["Location"]
        assert authorize.startswith(f"{self.url}/oauth2/authorize?"), authorize
        form = {"action": "deny"} if deny else {"sub": sub}
        answer = requests.post(authorize, data=form, allow_redirects=False, timeout=10)
        assert answer.status_code == 302, answer.text
        back = urlsplit(answer.headers["Location"])
        return client.get(f"{back.path}?{back.query}")


@contextlib.contextmanager
def running_provider() -> Iterator[OidcProvider]:
    """Start the provider on a free loopback port for as long as the context lasts."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # authlib's own deprecation notes, at import
        from oidc_provider_mock import run_server_in_thread
    # werkzeug logs every request at INFO; the tests' output stays readable without it.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with run_server_in_thread() as server:
        yield OidcProvider(f"http://localhost:{server.server_port}")
