"""The reservations page: the empty state, a lead reserving (errors next to the field), an approver approving, the
lead withdrawing; the team page and the cluster's capacity table show an approved window."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from allocations.models import Reservation, ReservationStatus
from tests.factories import DemoOrg

pytestmark = pytest.mark.django_db

PAGE = reverse("allocations:reservation-list")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form(org: DemoOrg, **changes) -> dict[str, object]:
    start = (timezone.now() + timedelta(days=1)).replace(second=0, microsecond=0)
    return {
        "team": org.team.pk,
        "node_pool": org.pool.pk,
        "resource_name": "nvidia.com/gpu",
        "quantity": 6,
        "start": start.strftime("%Y-%m-%dT%H:%M"),
        "end": (start + timedelta(hours=9)).strftime("%Y-%m-%dT%H:%M"),
        "reason": "Retraining",
        **changes,
    }


def approved(org: DemoOrg, quantity: int = 6, hours_ahead: int = 24) -> Reservation:
    start = timezone.now() + timedelta(hours=hours_ahead)
    return Reservation.objects.create(
        team=org.team,
        node_pool=org.pool,
        resource_name="nvidia.com/gpu",
        quantity=quantity,
        start=start,
        end=start + timedelta(hours=9),
        requested_by=org.team_lead,
        status=ReservationStatus.APPROVED,
    )


def test_the_empty_page_explains_and_a_member_gets_no_form(demo_org: DemoOrg) -> None:
    html = client_for(demo_org.member).get(PAGE).content.decode()

    assert "No reservations yet." in html and "Nothing waits." in html
    assert 'id="reservation-form"' not in html


def test_a_lead_reserves_from_the_page_and_an_approver_approves(demo_org: DemoOrg) -> None:
    lead = client_for(demo_org.team_lead)
    assert 'id="reservation-form"' in lead.get(PAGE).content.decode()

    response = lead.post(PAGE, form(demo_org))

    assert response.status_code == 302
    reservation = Reservation.objects.get()
    assert (reservation.quantity, reservation.status) == (6, ReservationStatus.PENDING)
    queue = client_for(demo_org.approver).get(PAGE).content.decode()
    assert f'id="reservation-{reservation.pk}"' in queue and 'value="approve"' in queue

    decided = client_for(demo_org.approver).post(
        reverse("allocations:reservation-decide", args=[reservation.pk]), {"decision": "approve"}
    )
    assert decided.status_code == 302
    reservation.refresh_from_db()
    assert reservation.status == ReservationStatus.APPROVED

    lead.post(reverse("allocations:reservation-cancel", args=[reservation.pk]))
    reservation.refresh_from_db()
    assert reservation.status == ReservationStatus.CANCELLED


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"quantity": 9}, "quantity", "quota allows at most 8"),
        ({"quantity": 40}, "quantity", "has 16 nvidia.com/gpu in all"),
        ({"end": "2020-01-01T00:00"}, "end", "must end after it starts"),
        ({"start": "2020-01-01T00:00", "end": "2020-01-01T09:00"}, "start", "must start in the future"),
    ],
)
def test_a_bad_reservation_shows_the_error_at_its_field(demo_org: DemoOrg, changes, field, words) -> None:
    response = client_for(demo_org.team_lead).post(PAGE, form(demo_org, **changes))

    assert response.status_code == 400
    html = response.content.decode()
    start = html.index(f'data-field="{field}"')
    assert words in html[start : html.index("</div>", html.index("errorlist", start))]
    assert not Reservation.objects.exists()


def test_another_teams_reservations_are_not_shown(demo_org: DemoOrg) -> None:
    reservation = approved(demo_org)

    assert f'id="reservation-{reservation.pk}"' not in client_for(demo_org.outsider).get(PAGE).content.decode()
    assert (
        client_for(demo_org.outsider).post(reverse("allocations:reservation-cancel", args=[reservation.pk])).status_code
        == 404
    )


def test_the_team_page_and_the_capacity_table_show_the_window(demo_org: DemoOrg) -> None:
    reservation = approved(demo_org, quantity=6, hours_ahead=1)

    team_page = client_for(demo_org.member).get(reverse("allocations:team-detail", args=["vision"])).content.decode()
    assert f'data-reservation="{reservation.pk}"' in team_page and "\u00d7 6" in team_page

    cluster = reverse("allocations:cluster-detail", args=["demo"])
    with time_machine.travel(reservation.start + timedelta(minutes=1)):
        html = client_for(demo_org.approver).get(cluster).content.decode()
    row = html[html.index('data-resource="nvidia.com/gpu"') :]
    row = row[: row.index("</tr>")]
    # 16 GPUs: 0 allocated, 6 reserved for the window that is on now, 10 free.
    assert '<td class="num reserved-units">6</td>' in row and '<td class="num">10</td>' in row
    assert f'data-reservation="{reservation.pk}"' in html and "for vision" in html
