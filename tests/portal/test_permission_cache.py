"""Permissions read through the reference cache (portal.sso.backends.PasswordBackend): no query once a user's
permissions are kept, and every change of who holds what is seen at once, by every process."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import override_settings

from allocations.selectors import APPROVE_PERMISSION, APPROVERS_GROUP, user_is_approver
from tests.factories import DemoOrg

DEAD_REDIS = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
}


def fresh(user: User) -> User:
    """The user as the next request reads them: a new object, with no permissions kept on it."""
    return User.objects.get(pk=user.pk)


def approve_permission() -> Permission:
    app_label, codename = APPROVE_PERMISSION.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


def test_a_kept_users_permissions_are_read_without_a_query(demo_org: DemoOrg, django_assert_num_queries) -> None:
    assert fresh(demo_org.approver).has_perm(APPROVE_PERMISSION)
    approver = fresh(demo_org.approver)
    with django_assert_num_queries(0):
        assert approver.has_perm(APPROVE_PERMISSION)
        assert not approver.has_perm("allocations.delete_cluster")


def test_leaving_the_approvers_group_withdraws_the_permission_at_once(demo_org: DemoOrg) -> None:
    assert user_is_approver(fresh(demo_org.approver))
    demo_org.approver.groups.remove(Group.objects.get(name=APPROVERS_GROUP))
    assert not user_is_approver(fresh(demo_org.approver))


def test_joining_the_group_from_its_side_grants_it_at_once(demo_org: DemoOrg) -> None:
    assert not user_is_approver(fresh(demo_org.member))
    Group.objects.get(name=APPROVERS_GROUP).user_set.add(demo_org.member)
    assert user_is_approver(fresh(demo_org.member))


def test_a_permission_taken_from_the_group_is_withdrawn_from_its_members(demo_org: DemoOrg) -> None:
    assert user_is_approver(fresh(demo_org.approver))
    Group.objects.get(name=APPROVERS_GROUP).permissions.remove(approve_permission())
    assert not user_is_approver(fresh(demo_org.approver))


def test_clearing_a_users_own_permissions_and_deleting_their_group_are_seen(demo_org: DemoOrg) -> None:
    member = demo_org.member
    member.user_permissions.add(approve_permission())
    assert user_is_approver(fresh(member))
    member.user_permissions.clear()
    assert not user_is_approver(fresh(member))
    assert user_is_approver(fresh(demo_org.approver))
    Group.objects.get(name=APPROVERS_GROUP).delete()
    assert not user_is_approver(fresh(demo_org.approver))


@pytest.mark.parametrize("change", ["deactivated", "superuser"])
def test_inactive_and_superusers_are_answered_as_django_does(demo_org: DemoOrg, change: str) -> None:
    user = fresh(demo_org.member)
    assert not user.has_perm("allocations.delete_cluster")
    if change == "deactivated":
        demo_org.approver.is_active = False
        demo_org.approver.save()
        assert not fresh(demo_org.approver).has_perm(APPROVE_PERMISSION)
    else:
        demo_org.member.is_superuser = True
        demo_org.member.save()
        assert fresh(demo_org.member).has_perm("allocations.delete_cluster")


def test_without_the_cache_permissions_come_from_the_database(demo_org: DemoOrg) -> None:
    with override_settings(CACHES=DEAD_REDIS):
        assert user_is_approver(fresh(demo_org.approver))
        demo_org.approver.groups.clear()
        assert not user_is_approver(fresh(demo_org.approver))
