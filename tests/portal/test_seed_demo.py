"""seed_demo builds the documented demo organisation, is idempotent, and refuses to run with DEBUG off."""

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from django.test import RequestFactory, override_settings

from allocations.models import Cluster, GpuRequest, Membership, NodePool, Quota, RequestEvent, Team
from allocations.selectors import user_is_approver
from billing.costs.visibility import user_can_view_all_costs

pytestmark = pytest.mark.django_db

COUNTED = (Team, Membership, Cluster, NodePool, Quota, GpuRequest, RequestEvent)


def _counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in COUNTED}


@override_settings(DEBUG=True)
def test_seed_demo_creates_the_documented_organisation() -> None:
    call_command("seed_demo")

    assert set(Team.objects.values_list("slug", flat=True)) == {"vision", "nlp", "speech"}
    roles = {(m.user.username, m.team.slug): m.role for m in Membership.objects.select_related("user", "team")}
    assert roles == {
        ("alice", "vision"): "member",
        ("dave", "vision"): "lead",
        ("bob", "nlp"): "member",
        ("erin", "speech"): "lead",
    }
    # django-axes needs the request authentication comes from (it locks per username and client IP).
    login = RequestFactory().post("/accounts/login/")
    for username in ("alice", "dave", "bob", "erin", "carol"):
        assert authenticate(login, username=username, password="demo") is not None
    carol = authenticate(login, username="carol", password="demo")
    assert carol.is_staff and user_is_approver(carol)
    assert not user_is_approver(authenticate(login, username="alice", password="demo"))
    finance = authenticate(login, username="finance", password="demo")
    assert finance is not None and user_can_view_all_costs(finance)  # the Finance group: every team's costs
    assert not user_is_approver(finance) and not finance.is_staff and not finance.memberships.exists()

    pools = {p.name: p for p in NodePool.objects.select_related("gpu_model")}
    assert (pools["a100-mig"].gpu_model.name, pools["a100-mig"].sharing_mode) == ("A100-40GB", "mig")
    assert (pools["h100-dedicated"].gpu_model.name, pools["h100-dedicated"].sharing_mode) == ("H100-80GB", "none")
    assert (pools["t4-shared"].gpu_model.name, pools["t4-shared"].sharing_mode) == ("T4", "time-slicing")
    assert Quota.objects.filter(team__slug="vision").exists() and Quota.objects.filter(team__slug="nlp").exists()

    statuses = set(GpuRequest.objects.values_list("status", flat=True))
    assert {"pending_approval", "active", "released", "rejected"} <= statuses
    for request in GpuRequest.objects.all():
        assert request.spec["resource_name"] == request.resource_name
        assert request.events.exists()


@override_settings(DEBUG=True)
def test_seed_demo_is_idempotent() -> None:
    call_command("seed_demo")
    first = _counts()
    call_command("seed_demo")
    assert _counts() == first


@override_settings(DEBUG=False)
def test_seed_demo_refuses_with_debug_off() -> None:
    with pytest.raises(CommandError, match="refuses to run with DEBUG off"):
        call_command("seed_demo")
    assert not Team.objects.exists()


@override_settings(DEBUG=False)
def test_seed_demo_runs_with_force() -> None:
    call_command("seed_demo", "--force")
    assert Team.objects.count() == 3
