"""The reference cache (infra.reference_cache): values kept while their families' tokens are unchanged, every
registered model change replacing its family's token, and the database answering when the cache does not."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from unittest import mock

import pytest
from django.apps import apps
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from django.db.models.signals import m2m_changed, post_save
from django.test import override_settings
from django.utils import timezone

from allocations.models import GpuModel, MigProfileDefinition, RequestEvent, SlaTier
from billing.models import ImportedUsage, UtilizationRollup
from infra.reference_cache import (
    INVALIDATIONS,
    MONTH_HELD,
    REFERENCE_DATA,
    ROLLUPS,
    cached,
    cached_each,
    invalidate,
    scoped,
)
from tests.billing.cost_helpers import load_book
from tests.factories import (
    ClusterFactory,
    DemoOrg,
    GpuRequestFactory,
    NodePoolFactory,
    TeamBudgetFactory,
    TeamFactory,
)

DEAD_REDIS = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
}


class Builds:
    """A build that counts its calls."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> int:
        self.count += 1
        return self.count


def test_a_value_is_built_once_while_its_families_are_unchanged_and_again_after_an_invalidation(db) -> None:
    build = Builds()
    assert cached(REFERENCE_DATA, "probe", build) == cached(REFERENCE_DATA, "probe", build) == 1

    invalidate(ROLLUPS)  # another family
    assert cached(REFERENCE_DATA, "probe", build) == 1
    invalidate(REFERENCE_DATA)
    assert cached(REFERENCE_DATA, "probe", build) == 2


def test_a_scope_is_invalidated_alone_and_with_its_family(db) -> None:
    team, other, whole = Builds(), Builds(), Builds()

    def read() -> tuple[int, int, int]:
        values = cached_each(
            {
                "team-1": (scoped(MONTH_HELD, 1), team),
                "team-2": (scoped(MONTH_HELD, 2), other),
                "organisation": (MONTH_HELD, whole),
            }
        )
        return values["team-1"], values["team-2"], values["organisation"]

    assert read() == (1, 1, 1)
    invalidate(MONTH_HELD, scoped(MONTH_HELD, 1))  # what a change of team 1's requests replaces
    assert read() == (2, 1, 2)


def test_an_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="not a family"):
        cached("catalogue", "probe", Builds())
    with pytest.raises(ValueError, match="not a family"):
        invalidate("catalogue")


@pytest.mark.django_db(transaction=True)
def test_tokens_are_replaced_now_and_again_when_the_transaction_commits() -> None:
    build = Builds()
    cached(REFERENCE_DATA, "probe", build)
    with transaction.atomic():
        invalidate(REFERENCE_DATA)
        assert cached(REFERENCE_DATA, "probe", build) == 2  # built from rows another process cannot see yet
    assert cached(REFERENCE_DATA, "probe", build) == 3  # replaced once more when it committed


# One row of each registered model, as its tests make them: a change of it must replace its family's token.
def _rows(org: DemoOrg) -> dict[str, Callable[[], Any]]:
    def book() -> Any:
        return load_book({"H100-80GB": "2.00"}, effective_from="2026-01-01", tier2_batch="1.5")

    def request() -> Any:
        return GpuRequestFactory(team=org.team, requester=org.member)

    return {
        "auth.Permission": lambda: Permission.objects.create(
            codename="probe", name="Probe", content_type=ContentType.objects.get_for_model(SlaTier)
        ),
        "auth.Group": lambda: Group.objects.create(name="probe"),
        "allocations.GpuModel": lambda: GpuModel.objects.filter(node_pools=None).order_by("name").first(),
        "allocations.MigProfileDefinition": lambda: MigProfileDefinition.objects.order_by("pk").first(),
        "allocations.SlaTier": lambda: SlaTier.objects.create(
            slug="probe", name="Probe", priority_class_name="probe", priority_value=1
        ),
        "allocations.Cluster": lambda: ClusterFactory(name="probe"),
        "allocations.NodePool": lambda: NodePoolFactory(cluster=org.cluster, name="probe"),
        "allocations.Team": lambda: TeamFactory(slug="probe"),
        "allocations.GpuRequest": request,
        # Appended only: the change is the new event's save.
        "allocations.RequestEvent": lambda: RequestEvent(request=request(), to_status="approved", actor_label="test"),
        "billing.PriceBook": book,
        "billing.GpuPrice": lambda: book().gpu_prices.get(),
        "billing.SlaMultiplier": lambda: book().sla_multipliers.get(),
        "billing.TeamBudget": lambda: TeamBudgetFactory(team=org.team),
        "billing.ImportedUsage": lambda: ImportedUsage.objects.create(
            team=org.team,
            request_label="old-1",
            gpu_model="H100-80GB",
            strategy="dedicated",
            resource_name="nvidia.com/gpu",
            quantity=1,
            start=datetime(2026, 11, 2, tzinfo=UTC),
            end=datetime(2026, 11, 3, tzinfo=UTC),
            imported_at=timezone.now(),
        ),
        "billing.UtilizationRollup": lambda: UtilizationRollup.objects.create(
            cluster=org.cluster, hour=datetime(2026, 11, 2, tzinfo=UTC), gpu_uuid="GPU-1", pulled_at=timezone.now()
        ),
    }


# Saves and deletes; the membership tables' m2m_changed rules are tests/portal/test_permission_cache.py's.
REGISTERED = [
    pytest.param(family, rule, signal, id=f"{family}-{rule.model}-{'save' if signal is post_save else 'delete'}")
    for family, rules in INVALIDATIONS.items()
    for rule in rules
    for signal in rule.signals
    if signal is not m2m_changed
]


def test_every_registered_model_has_a_row_to_change(demo_org: DemoOrg) -> None:
    registered = {rule.model for rules in INVALIDATIONS.values() for rule in rules if m2m_changed not in rule.signals}
    assert registered == set(_rows(demo_org))
    assert all(apps.get_model(model) for model in registered)


@pytest.mark.parametrize(("family", "rule", "signal"), REGISTERED)
def test_a_save_or_delete_of_a_registered_model_invalidates_its_family(demo_org, family, rule, signal) -> None:
    row = _rows(demo_org)[rule.model]()
    families = [family] + ([scoped(family, demo_org.team.pk)] if rule.per else [])
    builds = {name: Builds() for name in families}

    def read() -> list[int]:
        return [cached(name, f"probe:{name}", build) for name, build in builds.items()]

    assert read() == [1] * len(families)
    if signal is post_save:
        row.save()
    else:
        row.delete()
    assert read() == [2] * len(families)


@pytest.mark.filterwarnings("ignore")
def test_pages_answer_from_the_database_when_the_cache_is_down_and_a_warning_is_logged_once(
    client, demo_org: DemoOrg, caplog
) -> None:
    load_book({"H100-80GB": "2.00"}, effective_from="2026-01-01")
    pages = [
        ("/", "approver"),
        ("/approvals/", "approver"),
        ("/billing/utilization/", "approver"),
        ("/", "member"),
        ("/requests/new/", "member"),
        ("/teams/vision/", "member"),
    ]
    with override_settings(CACHES=DEAD_REDIS), caplog.at_level(logging.WARNING, logger="infra.reference_cache"):
        for url, role in pages:
            client.force_login(demo_org.user(role))
            assert client.get(url).status_code == 200, url
        demo_org.pool.save()  # a change while it is down: its token is replaced when the cache answers
    warnings = [record for record in caplog.records if record.name == "infra.reference_cache"]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING


def test_a_change_made_while_the_cache_was_down_is_seen_once_it_answers(db) -> None:
    build = Builds()
    cached(REFERENCE_DATA, "probe", build)
    with override_settings(CACHES=DEAD_REDIS):
        assert cached(REFERENCE_DATA, "probe", build) == 2  # from the database
        invalidate(REFERENCE_DATA)  # not written: the cache is down
    assert cached(REFERENCE_DATA, "probe", build) == 3  # the token it missed is replaced now
    assert cached(REFERENCE_DATA, "probe", build) == 3


def test_a_page_reads_each_token_once(client, demo_org: DemoOrg) -> None:
    """The team page shows several values of the reference data and the month so far: one read of each token."""
    load_book({"H100-80GB": "2.00"}, effective_from="2026-01-01")
    TeamBudgetFactory(team=demo_org.team)
    client.force_login(demo_org.member)
    client.get("/teams/vision/")
    with mock.patch.object(cache, "get_many", wraps=cache.get_many) as reads:
        assert client.get("/teams/vision/").status_code == 200
    keys = [key for call in reads.call_args_list for key in call.args[0]]
    assert any(REFERENCE_DATA in key for key in keys)
    assert len(keys) == len(set(keys))


def test_a_web_request_works_from_one_version_and_sees_its_own_changes(db) -> None:
    build = Builds()
    # The signals a request sends, without closing the test's database connection (as Django's test client does).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    request_started.send(sender=None)
    try:
        assert cached(REFERENCE_DATA, "probe", build) == 1
        cache.clear()  # as another process's change would: this request keeps the version it read
        assert cached(REFERENCE_DATA, "probe", build) == 1
        SlaTier.objects.get(slug="tier2_batch").save()  # a change the request makes itself is seen at once
        assert cached(REFERENCE_DATA, "probe", build) == 2
    finally:
        request_finished.send(sender=None)
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    cache.clear()
    assert cached(REFERENCE_DATA, "probe", build) == 3  # outside a request: read every time


@pytest.mark.filterwarnings("ignore")
def test_the_api_answers_with_a_token_when_the_cache_is_down_and_limits_are_not_applied(
    api_client, demo_org: DemoOrg, caplog
) -> None:
    from portal.tokens.services import api_token_create

    member = demo_org.user("member")
    key = api_token_create(acting_user=member, name="notebook", expires_in_days=1).key
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    with override_settings(CACHES=DEAD_REDIS), caplog.at_level(logging.WARNING, logger="infra.throttling"):
        assert api_client.get("/api/v1/requests/").status_code == 200
        api_client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
        assert api_client.get("/api/v1/requests/").status_code == 401
    assert any("Rate limit not applied" in record.getMessage() for record in caplog.records)
    assert any("Failed token not counted" in record.getMessage() for record in caplog.records)


@pytest.mark.filterwarnings("ignore")
def test_a_signed_in_session_outlives_a_cache_outage_and_signing_out_still_ends_it(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.user("member"))
    with override_settings(CACHES=DEAD_REDIS):
        assert client.get("/").status_code == 200  # the session read from the database
        client.logout()
        assert client.get("/").status_code == 302  # signed out: the row is gone
