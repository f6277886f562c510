"""/api/v1/reservations/: a lead reserves, an approver approves, the window and units are checked naming the field;
each role sees only its teams' reservations, and only approvers decide; the schema documents the endpoint."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml
from django.core.management import call_command
from django.utils import timezone

from allocations.models import Reservation, ReservationStatus

pytestmark = pytest.mark.django_db

URL = "/api/v1/reservations/"


def body(**changes) -> dict[str, object]:
    start = timezone.now() + timedelta(days=1)
    return {
        "team": "vision",
        "cluster": "demo",
        "pool": "h100",
        "resource_name": "nvidia.com/gpu",
        "quantity": 8,
        "start": start.isoformat(),
        "end": (start + timedelta(hours=9)).isoformat(),
        "reason": "Retraining on Tuesday",
        **changes,
    }


def test_a_lead_reserves_and_an_approver_approves(client_as) -> None:
    asked = client_as("team_lead").post(URL, body(), format="json")

    assert asked.status_code == 201, asked.json()
    made = asked.json()
    assert {key: made[key] for key in ("team", "cluster", "pool", "resource_name", "quantity", "status")} == {
        "team": "vision",
        "cluster": "demo",
        "pool": "h100",
        "resource_name": "nvidia.com/gpu",
        "quantity": 8,
        "status": "pending",
    }
    approved = client_as("approver").post(f"{URL}{made['id']}/approve/", {"comment": "ok"}, format="json")
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    assert approved.json()["decided_by"] == "approver"


@pytest.mark.parametrize(
    ("changes", "field", "status"),
    [
        ({"quantity": 9}, "quantity", 400),
        ({"quantity": 0}, "quantity", 400),
        ({"start": (timezone.now() - timedelta(hours=1)).isoformat()}, "start", 400),
        ({"end": timezone.now().isoformat()}, "end", 400),
        ({"pool": "a100"}, "pool", 400),
        # Well formed, naming no team of the caller's: 422, as for every body naming an unknown object.
        ({"team": "no-such-team"}, "team", 422),
        ({"resource_name": "nvidia.com/mig-1g.10gb"}, "resource_name", 400),
    ],
)
def test_a_bad_reservation_is_refused_naming_the_field(client_as, changes: dict, field: str, status: int) -> None:
    response = client_as("team_lead").post(URL, body(**changes), format="json")

    assert response.status_code == status
    assert field in response.json(), response.json()
    assert not Reservation.objects.exists()


# The platform admin is a superuser without a team: like an approver it sees and decides, and reserves for no team.
@pytest.mark.parametrize(
    ("role", "sees", "creates", "decides"),
    [
        ("platform_admin", True, 403, 200),
        ("approver", True, 403, 200),
        ("team_lead", True, 201, 403),
        ("member", True, 403, 403),
        ("outsider", False, 422, 404),  # Vision is not among an NLP member's teams
    ],
)
def test_roles(client_as, demo_org, role: str, sees: bool, creates: int, decides: int) -> None:
    reservation = Reservation.objects.create(
        team=demo_org.team,
        node_pool=demo_org.pool,
        resource_name="nvidia.com/gpu",
        quantity=2,
        start=timezone.now() + timedelta(days=2),
        end=timezone.now() + timedelta(days=2, hours=4),
        requested_by=demo_org.team_lead,
    )
    client = client_as(role)

    listed = client.get(URL).json()["results"]
    assert ([item["id"] for item in listed] == [reservation.pk]) is sees
    assert client.post(URL, body(quantity=1), format="json").status_code == creates
    decided = client.post(f"{URL}{reservation.pk}/approve/", {}, format="json")
    assert decided.status_code == decides
    reservation.refresh_from_db()
    assert (reservation.status == ReservationStatus.APPROVED) is (decides == 200)


def test_the_lead_cancels_and_the_schema_documents_it(client_as, demo_org, tmp_path) -> None:
    made = client_as("team_lead").post(URL, body(), format="json").json()

    cancelled = client_as("team_lead").post(f"{URL}{made['id']}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client_as("member").post(f"{URL}{made['id']}/cancel/").status_code == 403

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--file", str(target), "--validate", "--fail-on-warn")
    schema = yaml.safe_load(target.read_text())
    assert {URL, f"{URL}{{id}}/", f"{URL}{{id}}/approve/", f"{URL}{{id}}/decline/", f"{URL}{{id}}/cancel/"} <= set(
        schema["paths"]
    )
    fields = schema["components"]["schemas"]["Reservation"]["properties"]
    assert {"team", "cluster", "pool", "resource_name", "quantity", "start", "end", "status"} <= fields.keys()
