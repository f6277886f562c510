"""The audit trail (docs/security.md, "Audit trail"): writes to requests, memberships, clusters and pools, quotas and
price books are recorded by their services with who, from where (browser, API, admin, task, system) and the values
before and after, in the write's own transaction; platform admins read it on a page and at /api/v1/audit-events/
(filters, pagination, CSV through the shared writer); a daily task prunes past the retention."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from celery import shared_task
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import Quota, Role, Team
from allocations.requests.services import gpu_request_cancel, gpu_request_submit
from allocations.teams.services import membership_set
from audit.models import AuditEvent
from audit.tasks import prune_events
from billing.costs.services import price_book_load
from tests.factories import ROLES, DemoOrg, GpuRequestFactory, UserFactory

pytestmark = pytest.mark.django_db

API = "/api/v1/audit-events/"
PAGE = "/audit/"
PRICE_BOOK = """currency: USD
effective_from: 2031-01-01
gpu_models:
  A100-40GB: {hourly: "2.00"}
sla_multipliers: {tier1_realtime: "1.5", tier2_batch: "1.0", tier3_development: "0.8"}
"""


def _json(client, method: str, url: str, body: dict, **extra):
    return getattr(client, method)(url, data=json.dumps(body), content_type="application/json", **extra)


@pytest.mark.parametrize("role", [*ROLES, "anonymous"])
def test_role_matrix(demo_org: DemoOrg, role: str) -> None:
    if role == "anonymous":
        assert APIClient().get(API).status_code == 401
        assert Client().get(PAGE).status_code == 302
        return
    api = APIClient()
    api.force_authenticate(demo_org.user(role))
    browser = Client()
    browser.force_login(demo_org.user(role))
    expected = 200 if role == "platform_admin" else 403
    assert api.get(API).status_code == expected
    assert api.get(API, {"format": "csv"}).status_code == expected
    assert browser.get(PAGE).status_code == expected
    assert ('href="/audit/"' in browser.get("/").content.decode()) is (role == "platform_admin")


def test_a_cluster_written_through_the_api_is_recorded_with_its_origin_and_no_secret(demo_org: DemoOrg) -> None:
    admin = APIClient(REMOTE_ADDR="192.0.2.7")
    admin.force_authenticate(demo_org.platform_admin)
    body = {"name": "prod-eu", "backend": "kubernetes", "kubeconfig_secret_ref": "env:PROD_EU_KUBECONFIG"}

    assert _json(admin, "put", "/api/v1/clusters/prod-eu/", body).status_code == 201
    assert _json(admin, "put", "/api/v1/clusters/prod-eu/", {**body, "scheduler": "kueue"}).status_code == 200
    assert _json(admin, "put", "/api/v1/clusters/prod-eu/", {**body, "api_endpoint": "nope"}).status_code == 400

    created, changed = AuditEvent.objects.filter(object_type="allocations.cluster").order_by("at", "id")
    assert (created.action, created.actor, created.source, created.ip) == (
        "create",
        demo_org.platform_admin,
        "api",
        "192.0.2.7",
    )
    assert created.source_detail == "PUT /api/v1/clusters/prod-eu/"
    assert created.after["name"] == "prod-eu" and created.before is None
    assert created.after["kubeconfig_secret_ref"].startswith("sha256:")
    assert (changed.action, changed.before, changed.after) == (
        "update",
        {"scheduler": "default"},
        {"scheduler": "kueue"},
    )
    # The refused write left no event, and no event anywhere holds the reference itself.
    assert "PROD_EU_KUBECONFIG" not in json.dumps(list(AuditEvent.objects.values("before", "after")))


def test_a_refused_pool_write_records_nothing(demo_org: DemoOrg) -> None:
    admin = APIClient()
    admin.force_authenticate(demo_org.platform_admin)
    pool = {"name": "mig", "gpu_model": "A100-40GB", "sharing_mode": "mig", "mig_devices": {"4g.20gb": 2}}
    assert _json(admin, "put", "/api/v1/clusters/demo/node-pools/mig/", pool).status_code == 400
    assert not AuditEvent.objects.exists()


def test_request_lifecycle_from_the_browser(demo_org: DemoOrg) -> None:
    request = gpu_request_submit(
        command=["python", "main.py"],
        acting_user=demo_org.member,
        team=demo_org.team,
        name="train",
        profile_data={"workload_type": "training", "gpu_memory_gb": 40},
    )
    browser = Client(REMOTE_ADDR="198.51.100.4")
    browser.force_login(demo_org.approver)

    response = browser.post(f"/approvals/{request.pk}/", {"decision": "reject", "comment": "Not now."})

    assert response.status_code in (200, 302)
    events = list(
        AuditEvent.objects.filter(object_type="allocations.gpurequest", object_id=str(request.pk)).order_by("id")
    )
    assert [e.action for e in events] == ["create", "update", "update"]
    assert events[1].after == {"status": "pending_approval", "submitted_at": events[1].after["submitted_at"]}
    rejected = events[2]
    assert (rejected.actor, rejected.source, rejected.ip) == (demo_org.approver, "browser", "198.51.100.4")
    assert rejected.before["status"] == "pending_approval" and rejected.after["status"] == "rejected"
    assert rejected.comment == "Not now."


def test_memberships_set_by_single_sign_on_name_it_as_the_actor(demo_org: DemoOrg) -> None:
    newcomer = UserFactory(username="newcomer")
    membership_set(team=demo_org.team, user=newcomer, role=Role.MEMBER, acting_user=None, via="sso")
    membership_set(team=demo_org.team, user=newcomer, role=Role.LEAD, acting_user=None, via="sso")
    membership_set(team=demo_org.team, user=newcomer, role=Role.LEAD, acting_user=None, via="sso")  # no change
    events = AuditEvent.objects.filter(object_type="allocations.membership").order_by("id")
    assert [(e.action, e.actor_label, e.source) for e in events] == [
        ("create", "sso", "system"),
        ("update", "sso", "system"),
    ]
    assert events[1].before == {"role": "member"} and events[1].after == {"role": "lead"}


def test_a_quota_edited_in_the_admin_is_recorded_as_the_admin(demo_org: DemoOrg) -> None:
    quota = Quota.objects.get(team=demo_org.team)
    browser = Client()
    browser.force_login(demo_org.platform_admin)
    form = {"team": quota.team_id, "resource_name": quota.resource_name, "limit": 12, "cluster": "", "node_pool": ""}
    form.update({"borrowing_limit": "", "lending_limit": ""})

    response = browser.post(f"/admin/allocations/quota/{quota.pk}/change/", form)

    assert response.status_code == 302, response.content.decode()[:2000]
    event = AuditEvent.objects.get(object_type="allocations.quota")
    assert (event.source, event.actor, event.before, event.after) == (
        "admin",
        demo_org.platform_admin,
        {"limit": 8},
        {"limit": 12},
    )


@shared_task(name="tests.audit.add_member")
def _add_member_task(team_id: int, user_id: int) -> None:
    membership_set(
        team=Team.objects.get(pk=team_id), user=User.objects.get(pk=user_id), role=Role.MEMBER, acting_user=None
    )


def test_writes_inside_a_celery_task_say_task_and_its_name(demo_org: DemoOrg) -> None:
    newcomer = UserFactory(username="tasked")
    _add_member_task.apply(args=[demo_org.team.pk, newcomer.pk])
    event = AuditEvent.objects.get(object_type="allocations.membership")
    assert (event.source, event.source_detail, event.actor_label) == ("task", "tests.audit.add_member", "system")


def test_a_loaded_price_book_is_recorded(demo_org: DemoOrg) -> None:
    book, _ = price_book_load(text=PRICE_BOOK, acting_user=demo_org.platform_admin)
    event = AuditEvent.objects.get(object_type="billing.pricebook")
    assert event.action == "create" and event.actor == demo_org.platform_admin
    assert event.after["version"] == book.version and "A100-40GB" in event.after["source"]


def test_filters_pagination_and_a_bad_filter(demo_org: DemoOrg) -> None:
    for role in (Role.MEMBER, Role.LEAD, Role.MEMBER):
        membership_set(team=demo_org.team, user=demo_org.outsider, role=role, acting_user=demo_org.team_lead)
    membership_set(
        team=demo_org.other_team, user=demo_org.member, role=Role.MEMBER, acting_user=demo_org.platform_admin
    )
    AuditEvent.objects.filter(actor_label="platform_admin").update(at=timezone.now() - timedelta(days=3))
    admin = APIClient()
    admin.force_authenticate(demo_org.platform_admin)

    by_lead = admin.get(API, {"actor": "lead", "object_type": "allocations.membership", "page_size": 2}).json()
    recent = admin.get(API, {"since": (timezone.now() - timedelta(days=1)).isoformat()}).json()
    bad = admin.get(API, {"since": "last tuesday"})

    assert by_lead["count"] == 3 and len(by_lead["results"]) == 2 and by_lead["next"]
    assert [e["after"] for e in by_lead["results"]] == [{"role": "member"}, {"role": "lead"}]  # newest first
    assert recent["count"] == 3
    assert bad.status_code == 400 and "since" in bad.json()


def test_the_page_filters_and_shows_each_change(demo_org: DemoOrg) -> None:
    membership_set(team=demo_org.team, user=demo_org.outsider, role=Role.MEMBER, acting_user=demo_org.team_lead)
    membership_set(team=demo_org.team, user=demo_org.outsider, role=Role.LEAD, acting_user=demo_org.team_lead)
    browser = Client()
    browser.force_login(demo_org.platform_admin)
    html = browser.get(PAGE, {"actor": "lead", "action": "update"}).content.decode()
    assert "<del>member</del> → <ins>lead</ins>" in html and "1 event." in html
    assert '<span title="role">Role</span>:' in html  # the field as people read it, its name on hover
    assert browser.get(PAGE, {"since": "not a date"}).status_code == 400


def test_changed_fields_read_as_their_verbose_names() -> None:
    from audit.templatetags.audit_names import field_name

    assert field_name("borrowing_limit", "allocations.quota") == "Borrowing limit"
    assert field_name("gpu_count", "allocations.gpurequest") == "GPU count"
    assert field_name("no_such_field", "allocations.quota") == "No such field"
    assert field_name("x_y", "no.model") == "X y"


def test_csv_export_goes_through_the_shared_writer(demo_org: DemoOrg) -> None:
    sneaky = UserFactory(username="@evil")
    membership_set(team=demo_org.team, user=demo_org.outsider, role=Role.MEMBER, acting_user=sneaky)
    admin = APIClient()
    admin.force_authenticate(demo_org.platform_admin)
    response = admin.get(API, {"format": "csv", "actor": "@evil"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows[0][:3] == ["at", "actor", "source"] and len(rows) == 2
    assert rows[1][1] == "'@evil"  # a formula-looking cell is neutralised


def test_retention_prunes_old_events_and_zero_keeps_them(demo_org: DemoOrg, settings) -> None:
    for role in (Role.LEAD, Role.MEMBER):
        membership_set(team=demo_org.team, user=demo_org.outsider, role=role, acting_user=None)
    old = AuditEvent.objects.order_by("id").first()
    AuditEvent.objects.filter(pk=old.pk).update(at=timezone.now() - timedelta(days=31))

    settings.AUDIT_RETENTION_DAYS = 0
    assert prune_events.apply().get() == 0
    settings.AUDIT_RETENTION_DAYS = 30
    assert prune_events.apply().get() == 1
    assert prune_events.apply().get() == 0  # idempotent
    assert list(AuditEvent.objects.values_list("after", flat=True)) == [{"role": "member"}]


def test_the_audit_api_is_in_the_openapi_schema(tmp_path) -> None:
    import yaml
    from django.core.management import call_command

    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    schema = yaml.safe_load(target.read_text())
    operation = schema["paths"]["/api/v1/audit-events/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"actor", "object_type", "since", "format", "page"}
    assert schema["components"]["schemas"]["AuditEvent"]["properties"].keys() >= {"actor", "at", "before", "after"}


def test_an_sso_group_mapping_added_in_the_admin_is_recorded(demo_org: DemoOrg) -> None:
    browser = Client(REMOTE_ADDR="192.0.2.44")
    browser.force_login(demo_org.platform_admin)
    form = {"group": "/ml/vision", "team": demo_org.team.pk, "role": "member", "access_group": ""}

    response = browser.post("/admin/portal/groupmapping/add/", form)

    assert response.status_code == 302, response.content.decode()[:2000]
    event = AuditEvent.objects.get(object_type="portal.groupmapping")
    assert (event.action, event.source, event.ip) == ("create", "admin", "192.0.2.44")
    assert event.after["group"] == "/ml/vision" and event.after["team_id"] == demo_org.team.pk


def test_the_list_and_the_page_stay_within_a_query_budget(demo_org: DemoOrg, django_assert_max_num_queries) -> None:
    for index in range(30):
        role = Role.LEAD if index % 2 else Role.MEMBER
        membership_set(team=demo_org.team, user=demo_org.outsider, role=role, acting_user=demo_org.team_lead)
    admin = APIClient()
    admin.force_authenticate(demo_org.platform_admin)
    browser = Client()
    browser.force_login(demo_org.platform_admin)
    with django_assert_max_num_queries(6):
        assert admin.get(API).json()["count"] == 30
    with django_assert_max_num_queries(6):
        streamed = admin.get(API, {"format": "csv"}).streaming_content
        assert len(b"".join(streamed).decode().splitlines()) == 31
    with django_assert_max_num_queries(12):
        assert browser.get(PAGE).status_code == 200


def test_a_snapshot_leaves_out_the_databases_generated_copies(demo_org: DemoOrg) -> None:
    from audit.services import audit_snapshot
    from tests.factories import GpuRequestFactory

    snapshot = audit_snapshot(GpuRequestFactory(team=demo_org.team, spec={"strategy": "mig"}))
    assert snapshot["spec"] == {"strategy": "mig"}
    assert "spec_text" not in snapshot  # the spec again, as text: it would double every request's record


def test_the_csv_is_streamed_a_line_per_event_as_rows_are_read(demo_org: DemoOrg) -> None:
    for index in range(5):
        membership_set(
            team=demo_org.team,
            user=demo_org.outsider,
            role=Role.LEAD if index % 2 else Role.MEMBER,
            acting_user=demo_org.team_lead,
        )
    admin = APIClient()
    admin.force_authenticate(demo_org.platform_admin)
    with CaptureQueriesContext(connection) as captured:
        response = admin.get(API, {"format": "csv"})
        assert response.streaming
        before_reading = len(captured)
        chunks = iter(response.streaming_content)
        header = next(chunks)
        assert header.decode().startswith("at,actor,source")
        assert len(captured) == before_reading  # nothing read from the events yet: rows come as the client reads
        lines = [header, *chunks]
    assert len(captured) > before_reading
    events = AuditEvent.objects.count()
    assert len(lines) == events + 1  # one chunk per line: never the whole document in memory


def test_the_page_names_what_changed_as_people_say_it(demo_org: DemoOrg) -> None:
    request = GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    gpu_request_cancel(request=request, acting_user=demo_org.member)
    browser = Client()
    browser.force_login(demo_org.platform_admin)
    html = browser.get(PAGE, {"object_type": "allocations.gpurequest"}).content.decode()
    assert '<span title="allocations.gpurequest">GPU request</span>' in html
    assert '<option value="allocations.gpurequest" selected>GPU request</option>' in html
    assert "<code>allocations.gpurequest</code>" not in html
