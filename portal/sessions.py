"""The session engine (``SESSION_ENGINE``) and the middleware that signs a request's user in from it: Django's
database sessions, whose row also names the user it signs in, so that the session and its user are read in one
statement on every signed-in request (issue #15).

``Session.objects.get(...)`` built and compiled a queryset and had PostgreSQL plan it for every page view: about
0.54 ms, against 0.18 ms for the same read compiled once (``allocations.compiled_reads.CompiledRead``). The user
was then a second read of its own (``portal.sso.backends.active_user``): one round trip of the two that every empty
signed-in page made. Now the session's row (``portal.models.UserSession``) carries the id of the user its data
signs in, written whenever the session is saved, and the read of the session (the key, unexpired now) joins that
user with their permissions.

Django's own checks run unchanged: ``django.contrib.auth.get_user`` takes the user id and backend from the session's
signed data, asks the backend for the user and verifies the session's hash against the user's password. The backend
(``active_user``) answers with the user read beside the session only when the row named that very id, and reads the
user itself otherwise (a session saved before the row named its user, or a call from outside a request).
Writes, expiry and ``clearsessions`` are Django's.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.contrib.auth import SESSION_KEY
from django.contrib.auth import middleware as auth_middleware
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.sessions.backends import db
from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import SimpleLazyObject

from allocations.compiled_reads import TEXT_STAND_IN, WINDOW_STAND_INS, CompiledRead, fits_bigint
from allocations.user_permissions import keep_held_permissions, with_held_permissions
from portal.models import UserSession


def _live_session(key: str, now: Any) -> Any:
    live = UserSession.objects.filter(session_key=key, expire_date__gt=now).select_related("user")
    return with_held_permissions(live, user_id="user_id")


_LIVE_SESSION = CompiledRead(
    UserSession,
    _live_session,
    stand_ins={"key": TEXT_STAND_IN, "now": WINDOW_STAND_INS["start"]},
)
# No session row read (the store never loaded one): the backend reads the user itself.
NOT_READ = object()


def user_id_of(value: Any) -> int | None:
    """The user id a session's data holds (``SESSION_KEY``, text), as the row's column keeps it: None for none, or
    for anything that is not an id of the user table."""
    if value is None:
        return None
    try:
        user_id = int(value)
    except (TypeError, ValueError):
        return None
    return user_id if fits_bigint(user_id) and user_id > 0 else None


class SessionStore(db.SessionStore):
    """Django's database session store on ``portal.models.UserSession``; the session is read as Django reads it
    (``_get_session_from_db``), its user with it."""

    def __init__(self, session_key: str | None = None) -> None:
        super().__init__(session_key)
        # (user id the row named, that user if active with permissions kept, else None), once a row was read.
        self._user_read: tuple[int, AbstractBaseUser | None] | None = None

    @classmethod
    def get_model_class(cls) -> type[UserSession]:
        return UserSession

    def _get_session_from_db(self) -> Any:
        key = self.session_key
        session = None if key is None else _LIVE_SESSION.first(key=key, now=timezone.now())
        if session is None:
            self._session_key = None  # as Django's store does: a new key is made if this session is saved
            self._user_read = None
            return None
        user = session.user if session.user_id is not None else None
        if user is not None and not user.is_active:
            user = None  # as both backends answer: nobody
        if user is not None:
            keep_held_permissions(user, carrier=session)
        self._user_read = None if session.user_id is None else (session.user_id, user)
        return session

    def user_read_with_session(self, user_id: int) -> Any:
        """The active user ``user_id`` (or None: none active) as read with this session's row, when the row named
        that user; ``NOT_READ`` otherwise."""
        if self._user_read is None or self._user_read[0] != user_id:
            return NOT_READ
        return self._user_read[1]

    def create_model_instance(self, data: dict[str, Any]) -> Any:
        session = super().create_model_instance(data)
        session.user_id = user_id_of(data.get(SESSION_KEY))
        return session

    async def acreate_model_instance(self, data: dict[str, Any]) -> Any:
        session = await super().acreate_model_instance(data)
        session.user_id = user_id_of(data.get(SESSION_KEY))
        return session


# The session of the request whose user Django's get_user is reading now (set by AuthenticationMiddleware only).
_signing_in_from: ContextVar[Any] = ContextVar("session_signing_in", default=None)


@contextmanager
def signing_in_from(session: Any) -> Iterator[None]:
    """Within the block, ``user_read_with_session`` answers from ``session``'s read."""
    token = _signing_in_from.set(session)
    try:
        yield
    finally:
        _signing_in_from.reset(token)


def user_read_with_session(user_id: int) -> Any:
    """The active user ``user_id`` (or None) read with the session of the request being signed in, or ``NOT_READ``
    when there is no such request or its session's row did not name this user."""
    session = _signing_in_from.get()
    if not isinstance(session, SessionStore):
        return NOT_READ
    return session.user_read_with_session(user_id)


def _user_of(request: HttpRequest) -> Any:
    with signing_in_from(request.session):
        return auth_middleware.get_user(request)  # Django's: auth.get_user once, kept on the request


class AuthenticationMiddleware(auth_middleware.AuthenticationMiddleware):
    """Django's ``AuthenticationMiddleware`` whose ``request.user`` is read by Django's ``get_user`` while the
    request's session can answer for the user it read with the session's row."""

    def process_request(self, request: HttpRequest) -> None:
        super().process_request(request)
        request.user = SimpleLazyObject(lambda: _user_of(request))
