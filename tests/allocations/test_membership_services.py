"""Membership writes: add or re-role a member, remove one; a no-op says so and an unknown role is refused."""

import pytest

from allocations.models import Membership, Role
from allocations.teams.services import membership_delete, membership_set
from tests.factories import TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_set_creates_then_changes_the_role_and_reports_no_op() -> None:
    team, user = TeamFactory(), UserFactory()
    _, changed = membership_set(team=team, user=user, role=Role.MEMBER, acting_user=None, via="sso")
    assert changed and Membership.objects.get(team=team, user=user).role == Role.MEMBER
    _, changed = membership_set(team=team, user=user, role=Role.MEMBER, acting_user=None, via="sso")
    assert not changed
    _, changed = membership_set(team=team, user=user, role=Role.LEAD, acting_user=UserFactory())
    assert changed and Membership.objects.get(team=team, user=user).role == Role.LEAD
    assert Membership.objects.filter(team=team, user=user).count() == 1


def test_an_unknown_role_is_refused_and_nothing_is_written() -> None:
    team, user = TeamFactory(), UserFactory()
    with pytest.raises(ValueError, match="Unknown team role 'owner'"):
        membership_set(team=team, user=user, role="owner", acting_user=None)
    assert not Membership.objects.exists()


def test_delete_removes_once() -> None:
    team, user = TeamFactory(), UserFactory()
    membership_set(team=team, user=user, role=Role.MEMBER, acting_user=None)
    assert membership_delete(team=team, user=user, acting_user=None) is True
    assert membership_delete(team=team, user=user, acting_user=None) is False
