"""``user_is_approver``: the same answer as ``User.has_perm`` for every way of holding the approve permission, whether
the user came from a session or a token; the permissions are read once per user object (ModelBackend's reads then
answer the user's other permissions too), and a change of permissions or groups is seen by the next request."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AnonymousUser, Group, Permission
from django.test import Client

from allocations.selectors import APPROVE_PERMISSION, APPROVERS_GROUP, user_is_approver
from portal.sso.backends import PasswordBackend
from portal.tokens.authentication import NamedTokenAuthentication
from portal.tokens.services import api_token_create
from tests.factories import UserFactory, legacy_key_for

pytestmark = pytest.mark.django_db


class RefusingBackend(ModelBackend):
    """A backend whose permissions are not ModelBackend's: the check must ask it, through has_perm."""

    def has_perm(self, user_obj: Any, perm: str, obj: Any = None) -> bool:
        return False


def _approve_permission() -> Permission:
    app_label, codename = APPROVE_PERMISSION.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def _fresh(user: Any) -> Any:
    """The user as the next request reads it (no permission cache on the instance)."""
    return get_user_model().objects.get(pk=user.pk)


@pytest.mark.parametrize(
    ("how", "approver"),
    [
        ("nothing", False),
        ("direct", True),
        ("group", True),
        ("other_group", False),
        ("other_permission", False),
        ("staff", True),
        ("superuser", True),
        ("inactive_with_group", False),
        ("inactive_superuser", False),
    ],
)
def test_the_answer_is_has_perms(how, approver, django_assert_num_queries, django_assert_max_num_queries) -> None:
    user = UserFactory(
        is_staff=how == "staff",
        is_superuser=how in ("superuser", "inactive_superuser"),
        is_active=not how.startswith("inactive"),
    )
    if how == "direct":
        user.user_permissions.add(_approve_permission())
    elif how in ("group", "inactive_with_group"):
        user.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    elif how == "other_group":
        other = Group.objects.create(name="Readers")
        other.permissions.add(Permission.objects.exclude(pk=_approve_permission().pk).first())
        user.groups.add(other)
    elif how == "other_permission":
        user.user_permissions.add(Permission.objects.get(codename="view_gpurequest"))
    expected = bool(user.is_staff or user.has_perm(APPROVE_PERMISSION)) and user.is_active
    assert expected is approver
    user = _fresh(user)
    reads_permissions = how in ("nothing", "direct", "group", "other_group", "other_permission")
    with django_assert_max_num_queries(2 if reads_permissions else 0):
        assert user_is_approver(user) is approver
    with django_assert_num_queries(0):  # read once per user object, as ModelBackend keeps them
        assert user_is_approver(user) is approver


def test_a_permission_or_group_change_is_seen_by_the_next_request() -> None:
    user = UserFactory()
    group = Group.objects.get(name=APPROVERS_GROUP)
    assert not user_is_approver(_fresh(user))
    user.groups.add(group)
    assert user_is_approver(_fresh(user))
    group.permissions.remove(_approve_permission())
    assert not user_is_approver(_fresh(user))
    group.permissions.add(_approve_permission())
    assert user_is_approver(_fresh(user))
    user.groups.remove(group)
    assert not user_is_approver(_fresh(user))
    user.user_permissions.add(_approve_permission())
    assert user_is_approver(_fresh(user))
    user.user_permissions.clear()
    assert not user_is_approver(_fresh(user))


def test_the_users_other_permissions_come_with_the_same_reads(django_assert_max_num_queries) -> None:
    user = UserFactory()
    readers = Group.objects.create(name="Readers")
    readers.permissions.add(Permission.objects.get(codename="view_team"))
    user.groups.add(readers, Group.objects.get(name=APPROVERS_GROUP))
    user.user_permissions.add(Permission.objects.get(codename="view_cluster"))
    expected = _fresh(user)
    backend = ModelBackend()
    own = (backend.get_all_permissions(expected), backend.get_user_permissions(expected))
    own += (backend.get_group_permissions(expected),)
    assert "allocations.view_cluster" in own[1] and "allocations.view_team" in own[2]

    # The portal's backend answers as ModelBackend does, from at most the same two reads (none once kept).
    portal = PasswordBackend()
    user = _fresh(user)
    with django_assert_max_num_queries(2):
        assert user_is_approver(user)
        assert user.has_perm("allocations.view_cluster") and user.has_perm("allocations.view_team")
        assert not user.has_perm("allocations.delete_cluster")
        assert user_is_approver(user)
        assert (portal.get_all_permissions(user), portal.get_user_permissions(user)) == own[:2]
        assert portal.get_group_permissions(user) == own[2]


def test_anonymous_is_not_an_approver(django_assert_num_queries) -> None:
    with django_assert_num_queries(0):
        assert not user_is_approver(AnonymousUser())


def test_backends_with_their_own_permissions_are_asked(settings) -> None:
    user = UserFactory()
    user.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    assert user_is_approver(_fresh(user))
    settings.AUTHENTICATION_BACKENDS = [f"{__name__}.RefusingBackend"]
    assert not user_is_approver(_fresh(user))


def _read_by_session(user: Any) -> Any:
    client = Client()
    client.force_login(user, backend="portal.sso.backends.PasswordBackend")
    return client.get("/").wsgi_request.user


def _read_by_named_token(user: Any) -> Any:
    new = api_token_create(acting_user=user, name="nb", expires_in_days=7)
    return NamedTokenAuthentication().authenticate_credentials(new.key)[0]


def _read_by_legacy_token(user: Any) -> Any:
    return NamedTokenAuthentication().authenticate_credentials(legacy_key_for(user=user).key)[0]


@pytest.mark.parametrize("read", [_read_by_session, _read_by_named_token, _read_by_legacy_token])
@pytest.mark.parametrize("how", ["nothing", "direct", "groups", "staff", "superuser"])
def test_the_signed_in_user_has_their_permissions(how, read) -> None:
    """However the user signed in (a session, a named or a legacy token), the approver check and has_perm answer what
    ModelBackend answers for them."""
    user = UserFactory(is_staff=how == "staff", is_superuser=how == "superuser")
    if how == "direct":
        user.user_permissions.add(_approve_permission(), Permission.objects.get(codename="view_cluster"))
    elif how == "groups":
        readers = Group.objects.create(name="Readers")
        readers.permissions.add(Permission.objects.get(codename="view_team"))
        user.groups.add(readers, Group.objects.get(name=APPROVERS_GROUP))
    backend = ModelBackend()
    expected = _fresh(user)

    signed_in = read(user)
    assert user_is_approver(signed_in) is (how != "nothing")
    assert signed_in.has_perm("allocations.view_cluster") is (how in ("direct", "superuser"))
    assert signed_in.has_perm("allocations.view_team") is (how in ("groups", "superuser"))
    assert backend.get_all_permissions(signed_in) == backend.get_all_permissions(expected)


def test_a_backend_with_its_own_permissions_is_asked_for_a_signed_in_user(settings) -> None:
    user = UserFactory()
    user.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, f"{__name__}.RefusingBackend"]
    assert user_is_approver(_read_by_legacy_token(user))  # any backend that grants it: has_perm's rule
    settings.AUTHENTICATION_BACKENDS = [f"{__name__}.RefusingBackend"]
    assert not user_is_approver(_read_by_named_token(user))
