"""Alerts grouped by GPU and rule, with acknowledge and mute: audited, scoped to the user's teams (approvers for
the fleet), and a run after the acknowledgement needs action again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from audit.models import AuditEvent
from billing.models import AlertAcknowledgement
from billing.utilization.selectors import platform_utilization, team_utilization_context
from tests.billing.rollups import hours_back, rollup
from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db
ACTION_URL = "/billing/alerts/action/"


@pytest.fixture
def idle_nights(demo_org: DemoOrg) -> DemoOrg:
    """GPU-NIGHT idles one hour in every six for a day (four separate runs), for a request of vision."""
    request = GpuRequestFactory(team=demo_org.team, node_pool=demo_org.pool, cluster=demo_org.cluster)
    for index, hour in enumerate(hours_back(timezone.now(), 24)):
        util = 2.0 if index % 6 == 0 else 60.0
        rollup(
            cluster=demo_org.cluster,
            hour=hour,
            team=demo_org.team,
            request=request,
            gpu_uuid="GPU-NIGHT",
            avg_utilization_pct=util,
        )
    return demo_org


def _groups(org: DemoOrg, user) -> list[dict]:
    return team_utilization_context(user=user, team=org.team)["team_utilization"]["alert_groups"]


def _data(org: DemoOrg, group, action: str, scope: str | None = None) -> dict[str, str]:
    return {
        "scope": org.team.slug if scope is None else scope,
        "cluster": group.cluster,
        "device": group.device,
        "kind": group.kind.value,
        "through": group.last_seen.isoformat(),
        "action": action,
        "next": "/teams/vision/",
    }


def _post(client: Client, org: DemoOrg, group, action: str, scope: str | None = None) -> int:
    return client.post(ACTION_URL, _data(org, group, action, scope)).status_code


def test_four_idle_runs_of_one_gpu_are_one_row_with_a_count(client: Client, idle_nights: DemoOrg) -> None:
    groups = _groups(idle_nights, idle_nights.member)

    assert len(groups) == 1
    group = groups[0]["group"]
    assert (group.device, group.kind.value, group.count, group.hours) == ("GPU-NIGHT", "idle", 4, 4)
    assert groups[0]["needs_action"]
    client.force_login(idle_nights.member)
    html = client.get("/teams/vision/").content.decode()
    assert html.count('data-alert-kind="idle"') == 1  # one row, not four
    assert 'class="num alert-count">4<' in html


def test_a_member_acknowledges_their_teams_alert_and_a_later_run_needs_action_again(
    client: Client, idle_nights: DemoOrg
) -> None:
    group = _groups(idle_nights, idle_nights.member)[0]["group"]
    client.force_login(idle_nights.member)

    response = client.post(ACTION_URL, {**_data(idle_nights, group, "acknowledge"), "next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"] == "/"  # never sent off the site
    html = client.get("/teams/vision/").content.decode()
    assert '<input type="hidden" name="next" value="/teams/vision/">' in html  # the forms come back to the page

    row = _groups(idle_nights, idle_nights.member)[0]
    assert row["acknowledged"] and not row["needs_action"] and row["acknowledged_by"] == "member"
    event = AuditEvent.objects.get(object_type="billing.alertacknowledgement")
    assert event.actor == idle_nights.member and event.comment == "alert acknowledge"
    # The fleet view is another scope: an approver still sees it needing action there.
    fleet = platform_utilization(user=idle_nights.approver)["alert_groups"]
    assert fleet[0]["needs_action"]

    # A new idle hour after the acknowledgement: the group needs action again.
    later = group.last_seen + timedelta(hours=3)
    rollup(
        cluster=idle_nights.cluster,
        hour=later if later < timezone.now() else group.last_seen,
        team=idle_nights.team,
        request=None,
        gpu_uuid="GPU-NIGHT",
        avg_utilization_pct=1.0,
        pod="late-0",
    )
    again = _groups(idle_nights, idle_nights.member)
    assert any(r["needs_action"] for r in again)


def test_mute_hides_it_from_needing_action_until_it_ends_and_unmute_brings_it_back(
    client: Client, idle_nights: DemoOrg
) -> None:
    group = _groups(idle_nights, idle_nights.member)[0]["group"]
    client.force_login(idle_nights.team_lead)

    assert _post(client, idle_nights, group, "mute:24") == 302
    row = _groups(idle_nights, idle_nights.member)[0]
    assert not row["needs_action"] and row["muted_until"] > timezone.now() + timedelta(hours=23)

    assert _post(client, idle_nights, group, "unmute") == 302
    assert _groups(idle_nights, idle_nights.member)[0]["needs_action"]
    assert AuditEvent.objects.filter(object_type="billing.alertacknowledgement").count() == 2


@pytest.mark.parametrize(
    ("role", "scope", "status"),
    [
        ("outsider", "vision", 404),  # not their team: as if it did not exist
        ("member", "", 403),  # the fleet view is for approvers
        ("approver", "", 302),
        ("approver", "vision", 302),
        ("platform_admin", "", 302),
    ],
)
def test_who_may_act_on_which_scope(client: Client, idle_nights: DemoOrg, role: str, scope: str, status: int) -> None:
    group = _groups(idle_nights, idle_nights.member)[0]["group"]
    client.force_login(idle_nights.user(role))

    assert _post(client, idle_nights, group, "acknowledge", scope=scope) == status
    assert AlertAcknowledgement.objects.exclude(acknowledged_through=None).exists() == (status == 302)


def test_an_unknown_rule_or_action_is_a_400_naming_the_field(client: Client, idle_nights: DemoOrg) -> None:
    group = _groups(idle_nights, idle_nights.member)[0]["group"]
    client.force_login(idle_nights.member)
    assert _post(client, idle_nights, group, "delete-everything") == 400
    response = client.post(
        ACTION_URL,
        {"scope": "vision", "cluster": group.cluster, "device": "GPU-NIGHT", "kind": "fire", "action": "mute:24"},
    )
    assert response.status_code == 400 and b"fire" in response.content
