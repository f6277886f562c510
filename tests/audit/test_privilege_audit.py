"""Every change of who may do what is in the audit trail, with the actor and the values before and after: superuser,
staff and approver in the admin, a group's permissions, a DRF key minted for another user, a lockout lifted, and the
platform groups single sign-on grants or withdraws."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import Group, Permission
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from allocations.selectors import APPROVERS_GROUP
from audit.models import AuditEvent
from portal.models import GroupMapping
from portal.sso.services import sso_groups_apply
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def root() -> Client:
    client = Client(REMOTE_ADDR="198.51.100.4")
    client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
    return client


def user_form(user, **changes) -> dict:
    form = {
        "username": user.username,
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": "on",
        "last_login_0": "",
        "last_login_1": "",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
        "groups": [],
        "user_permissions": [],
    }
    form.update(changes)
    return {key: value for key, value in form.items() if value is not None}


def test_making_a_user_superuser_staff_and_approver_in_the_admin_is_audited(root: Client) -> None:
    alice = UserFactory(username="alice", date_joined=timezone.now().replace(microsecond=0))
    approvers = Group.objects.get(name=APPROVERS_GROUP)

    response = root.post(
        reverse("admin:auth_user_change", args=[alice.pk]),
        user_form(alice, is_staff="on", is_superuser="on", groups=[approvers.pk]),
    )

    assert response.status_code == 302
    event = AuditEvent.objects.get(object_type="auth.user", object_id=str(alice.pk))
    assert (event.action, event.actor_label, event.source, event.ip) == ("update", "root", "admin", "198.51.100.4")
    assert event.before == {"is_staff": False, "is_superuser": False, "groups": []}
    assert event.after == {"is_staff": True, "is_superuser": True, "groups": [APPROVERS_GROUP]}

    root.post(reverse("admin:auth_user_change", args=[alice.pk]), user_form(alice))  # all withdrawn
    withdrawn = AuditEvent.objects.filter(object_type="auth.user").latest("at")
    assert withdrawn.before["groups"] == [APPROVERS_GROUP] and withdrawn.after == {
        "is_staff": False,
        "is_superuser": False,
        "groups": [],
    }


def test_a_groups_permissions_changed_in_the_admin_are_audited(root: Client) -> None:
    group = Group.objects.create(name="helpers")
    approve = Permission.objects.get(codename="approve_gpurequest")

    response = root.post(
        reverse("admin:auth_group_change", args=[group.pk]), {"name": "helpers", "permissions": [approve.pk]}
    )

    assert response.status_code == 302
    event = AuditEvent.objects.get(object_type="auth.group")
    assert event.before == {"permissions": []} and event.after == {"permissions": [str(approve)]}


def test_no_one_mints_a_plain_text_key_for_another_user_in_the_admin(root: Client) -> None:
    # DRF's key table is off the admin: keys are minted on the API tokens page, where each is the owner's and audited.
    assert root.get("/admin/authtoken/tokenproxy/add/").status_code == 404


def test_lifting_a_lockout_is_audited(root: Client) -> None:
    attempt = AccessAttempt.objects.create(
        username="alice", ip_address="203.0.113.9", user_agent="x", failures_since_start=5
    )

    response = root.post(reverse("admin:axes_accessattempt_delete", args=[attempt.pk]), {"post": "yes"})

    assert response.status_code == 302 and not AccessAttempt.objects.exists()
    event = AuditEvent.objects.get(object_type="axes.accessattempt")
    assert (event.action, event.actor_label, event.comment) == ("delete", "root", "sign-in lockout lifted")
    assert event.before["username"] == "alice" and event.before["ip_address"] == "203.0.113.9"


def test_single_sign_on_granting_and_withdrawing_the_approvers_group_is_audited() -> None:
    approvers = Group.objects.get(name=APPROVERS_GROUP)
    GroupMapping.objects.create(group="/platform/approvers", access_group=approvers)
    jdoe = UserFactory(username="jdoe")

    sso_groups_apply(user=jdoe, groups=["/platform/approvers"])
    sso_groups_apply(user=jdoe, groups=["/platform/approvers"])  # nothing changes: no event
    sso_groups_apply(user=jdoe, groups=["/elsewhere"])

    events = AuditEvent.objects.filter(object_type="auth.user", object_id=str(jdoe.pk)).order_by("at", "pk")
    assert [(e.actor, e.actor_label, e.before, e.after) for e in events] == [
        (None, "sso", {"groups": []}, {"groups": [APPROVERS_GROUP]}),
        (None, "sso", {"groups": [APPROVERS_GROUP]}, {"groups": []}),
    ]
