"""``user_is_approver``: the same answer as ``User.has_perm`` for every way of holding the approve permission (Django
keeps what it read on the user object: asking again reads nothing), and a change of permissions or groups seen by the
next request."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AnonymousUser, Group, Permission

from allocations.selectors import APPROVE_PERMISSION, APPROVERS_GROUP, user_is_approver
from tests.factories import UserFactory

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
def test_the_answer_is_has_perms(how, approver, django_assert_num_queries) -> None:
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
    assert user_is_approver(user) is approver
    with django_assert_num_queries(0):  # kept on the user object, as ModelBackend keeps them
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


def test_anonymous_is_not_an_approver(django_assert_num_queries) -> None:
    with django_assert_num_queries(0):
        assert not user_is_approver(AnonymousUser())


def test_backends_with_their_own_permissions_are_asked(settings) -> None:
    user = UserFactory()
    user.groups.add(Group.objects.get(name=APPROVERS_GROUP))
    assert user_is_approver(_fresh(user))
    settings.AUTHENTICATION_BACKENDS = [f"{__name__}.RefusingBackend"]
    assert not user_is_approver(_fresh(user))
