"""Single sign-on against a real OIDC provider on loopback: users, group-to-team mapping on every login, the policy.

The provider (tests/oidc.py) issues signed ID tokens with the claims each test sets; the portal's backend discovers it,
exchanges the code with PKCE, validates the token and runs the pipeline, over real HTTP.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.urls import reverse

from allocations.models import Membership, Role
from allocations.selectors import APPROVERS_GROUP, user_is_approver
from billing.costs.visibility import FINANCE_GROUP
from portal.models import GroupMapping, GroupSyncPolicy
from tests.factories import MembershipFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db
ENTRA_GUID = "5f2c7a1e-9b3d-4c8a-a1f0-3e6d2b9c4a71"


@pytest.fixture
def mapped():
    """Teams vision and nlp, and the mapping a platform admin would enter (Keycloak paths and an Entra GUID)."""
    vision = TeamFactory(slug="vision", name="Vision")
    nlp = TeamFactory(slug="nlp", name="NLP")
    approvers = Group.objects.get(name=APPROVERS_GROUP)
    finance = Group.objects.get(name=FINANCE_GROUP)
    GroupMapping.objects.create(group="/ml/vision/", team=vision, role=Role.MEMBER)
    GroupMapping.objects.create(group="/ml/vision/leads", team=vision, role=Role.LEAD)
    GroupMapping.objects.create(group=ENTRA_GUID.upper(), team=nlp, role=Role.MEMBER)
    GroupMapping.objects.create(group="/platform/approvers", access_group=approvers)
    GroupMapping.objects.create(group="/finance", access_group=finance)
    return vision, nlp


def roles_of(username: str) -> dict[str, str]:
    return dict(Membership.objects.filter(user__username=username).values_list("team__slug", "role"))


def test_the_login_page_offers_single_sign_on_only_when_configured(client, sso, settings) -> None:
    assert b"Sign in with single sign-on" in client.get(reverse("login")).content
    settings.OIDC_ISSUER = ""
    assert b"Sign in with single sign-on" not in client.get(reverse("login")).content


def test_first_login_creates_the_user_and_applies_the_mapping(client, sso, mapped) -> None:
    sso.set_user(
        "sub-jdoe",
        preferred_username="jdoe",
        email="jdoe@example.com",
        name="Jane Doe",
        groups=["/ml/vision", "/ml/vision/leads/", ENTRA_GUID, "/platform/approvers", "/unmapped"],
    )
    done = sso.sign_in(client, "sub-jdoe")
    assert done.status_code == 302 and done["Location"] == "/"

    user = get_user_model().objects.get(username="jdoe")
    assert (user.email, user.first_name, user.last_name) == ("jdoe@example.com", "Jane", "Doe")
    assert not user.has_usable_password()
    assert roles_of("jdoe") == {"vision": "lead", "nlp": "member"}
    assert user_is_approver(user)
    home = client.get(reverse("home"))
    assert home.status_code == 200
    assert b"Vision" in home.content and b"NLP" in home.content


def test_losing_a_group_removes_that_membership_at_the_next_login(client, sso, mapped) -> None:
    sso.set_user("sub-bob", preferred_username="bob", groups=["/ml/vision", ENTRA_GUID, "/finance"])
    sso.sign_in(client, "sub-bob")
    bob = get_user_model().objects.get(username="bob")
    hand_made = TeamFactory(slug="research", name="Research")
    MembershipFactory(user=bob, team=hand_made, role=Role.LEAD)  # no mapping names this team: SSO leaves it
    assert roles_of("bob") == {"vision": "member", "nlp": "member", "research": "lead"}
    assert bob.groups.filter(name=FINANCE_GROUP).exists()

    client.post(reverse("logout"))
    sso.set_user("sub-bob", preferred_username="bob", groups=[ENTRA_GUID])
    sso.sign_in(client, "sub-bob")
    assert roles_of("bob") == {"nlp": "member", "research": "lead"}
    assert not bob.groups.filter(name=FINANCE_GROUP).exists()
    assert get_user_model().objects.filter(username__startswith="bob").count() == 1  # the same user, not a new one


def test_a_missing_groups_claim_changes_nothing(client, sso, mapped) -> None:
    sso.set_user("sub-carl", preferred_username="carl", groups=["/ml/vision"])
    sso.sign_in(client, "sub-carl")
    client.post(reverse("logout"))
    sso.set_user("sub-carl", preferred_username="carl")  # the provider stopped sending the claim
    assert sso.sign_in(client, "sub-carl")["Location"] == "/"
    assert roles_of("carl") == {"vision": "member"}


def test_an_empty_groups_claim_removes_memberships_only_when_the_policy_says_so(client, sso, mapped) -> None:
    sso.set_user("sub-dana", preferred_username="dana", groups=["/ml/vision", "/platform/approvers"])
    sso.sign_in(client, "sub-dana")
    sso.set_user("sub-dana", preferred_username="dana", groups=[])
    client.post(reverse("logout"))
    sso.sign_in(client, "sub-dana")
    assert roles_of("dana") == {"vision": "member"}

    policy = GroupSyncPolicy.current()
    policy.empty_claim_removes = True
    policy.save()
    client.post(reverse("logout"))
    sso.sign_in(client, "sub-dana")
    assert roles_of("dana") == {}
    assert not user_is_approver(get_user_model().objects.get(username="dana"))


def test_entra_overage_changes_nothing(client, sso, mapped) -> None:
    sso.set_user("sub-erin", preferred_username="erin", groups=[ENTRA_GUID])
    sso.sign_in(client, "sub-erin")
    client.post(reverse("logout"))
    sso.set_user(
        "sub-erin",
        preferred_username="erin",
        _claim_names={"groups": "src1"},
        _claim_sources={"src1": {"endpoint": "https://graph.microsoft.com/v1.0/users/erin/getMemberObjects"}},
    )
    sso.sign_in(client, "sub-erin")
    assert roles_of("erin") == {"nlp": "member"}


def test_subgroups_join_when_the_mapping_includes_them(client, sso, mapped) -> None:
    GroupMapping.objects.filter(group="/ml/vision").update(include_subgroups=True)
    sso.set_user("sub-finn", preferred_username="finn", groups=["/ml/vision/interns"])
    sso.sign_in(client, "sub-finn")
    assert roles_of("finn") == {"vision": "member"}


def test_a_denied_login_returns_to_the_login_page_and_signs_nobody_in(client, sso, mapped) -> None:
    answer = sso.sign_in(client, "sub-gail", deny=True)
    assert answer.status_code == 302
    assert answer["Location"].startswith(reverse("login"))
    page = client.get(answer["Location"]).content.decode()
    assert "Sign-in with single sign-on did not complete: Authentication process canceled. Try again" in page
    assert client.get(reverse("home")).status_code == 302
    assert not get_user_model().objects.filter(username="sub-gail").exists()


def test_an_unusable_secret_reference_fails_the_login_and_logs_which(client, sso, settings, caplog) -> None:
    settings.OIDC_CLIENT_SECRET_REF = "env:NOT_SET_ANYWHERE"
    answer = client.post("/accounts/sso/login/oidc/")  # refused before the browser is sent to the provider
    assert answer.status_code == 302 and answer["Location"].startswith(reverse("login"))
    page = client.get(answer["Location"]).content.decode()
    assert "did not complete: Authentication configuration is incomplete" in page
    assert "NOT_SET_ANYWHERE" not in page  # the detail is for the operator's log, not the sign-in page
    assert "OIDC_CLIENT_SECRET_REF points at the environment variable NOT_SET_ANYWHERE" in caplog.text


def test_sso_does_not_take_over_a_local_account_with_the_same_name(client, sso, mapped) -> None:
    local = UserFactory(username="alice", is_staff=True)
    sso.set_user("sub-alice", preferred_username="alice", groups=["/ml/vision"])
    sso.sign_in(client, "sub-alice")
    assert roles_of("alice") == {}  # the local break-glass account is untouched
    (sso_user,) = get_user_model().objects.filter(social_auth__uid="sub-alice")
    assert sso_user.pk != local.pk and not sso_user.is_staff
    assert Membership.objects.filter(user=sso_user, team__slug="vision").exists()
