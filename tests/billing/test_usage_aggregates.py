"""The daily and monthly usage totals: equal to the rollups they sum, whatever range is read, and kept by the ingest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Sum

from billing.metering.aggregates import refresh_usage_aggregates
from billing.metering.selectors import rollups_between, usage_by_request, usage_totals
from billing.models import DailyUsage, MonthlyUsage, UtilizationRollup
from tests.billing.rollups import rollup
from tests.factories import DemoOrg, GpuRequestFactory

pytestmark = pytest.mark.django_db
SEP_29 = datetime(2026, 9, 29, tzinfo=UTC)


@pytest.fixture
def spread(demo_org: DemoOrg) -> DemoOrg:
    """Six days of a request's rollups across a month boundary (Sep 29 - Oct 5), an idle GPU, a MIG instance."""
    request = GpuRequestFactory(team=demo_org.team)
    demo_org.request = request
    rows = []
    for index in range(24 * 6):
        hour = SEP_29 + timedelta(hours=index)
        common = {"cluster": demo_org.cluster, "hour": hour, "pulled_at": hour, "gpu_model_name": "H100"}
        rows += [
            UtilizationRollup(
                **common, gpu_uuid="GPU-A", team=demo_org.team, request=request,
                sample_count=60 - index % 3, avg_utilization_pct=float(index % 90), energy_kwh=0.5,
            ),
            UtilizationRollup(**common, gpu_uuid="GPU-B", sample_count=60, avg_utilization_pct=None),
            UtilizationRollup(
                **common, gpu_uuid="GPU-C", mig_instance="1", team=demo_org.team, request=request,
                sample_count=30, avg_utilization_pct=20.0,
            ),
        ]  # fmt: skip
    UtilizationRollup.objects.bulk_create(rows)
    refresh_usage_aggregates(cluster_id=demo_org.cluster.pk, start=SEP_29, end=SEP_29 + timedelta(days=6))
    return demo_org


def _raw(start: datetime, end: datetime, **filters) -> dict:
    qs = rollups_between(start=start, end=end).filter(**filters)
    rows = list(qs.values_list("sample_count", "avg_utilization_pct", "energy_kwh"))
    return {
        "samples": sum(r[0] for r in rows),
        "util_weighted": sum(r[0] * r[1] for r in rows if r[1] is not None),
        "util_samples": sum(r[0] for r in rows if r[1] is not None),
        "energy": sum(r[2] for r in rows if r[2] is not None) or None,
    }


def test_the_totals_hold_each_day_and_month_of_the_rollups(spread: DemoOrg) -> None:
    assert DailyUsage.objects.values("day").distinct().count() == 6
    october = MonthlyUsage.objects.filter(month="2026-10-01")
    assert (
        october.aggregate(s=Sum("sample_count"))["s"]
        == _raw(datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))["samples"]
    )
    # Whole GPU, MIG instance and the idle GPU stay apart.
    assert set(october.values_list("is_mig", "request_id")) == {(False, spread.request.pk), (True, spread.request.pk),
                                                                (False, None)}  # fmt: skip


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (SEP_29, SEP_29 + timedelta(days=6)),  # whole days on both sides of a month boundary
        (SEP_29 + timedelta(hours=5, minutes=30), SEP_29 + timedelta(days=4, hours=7)),  # ragged ends
        (datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC)),  # a whole month
        (SEP_29 + timedelta(hours=3), SEP_29 + timedelta(hours=9)),  # inside one day
    ],
)
def test_any_range_reads_what_the_rollups_say(spread: DemoOrg, start: datetime, end: datetime) -> None:
    totals = usage_totals(start=start, end=end, by=("request_id",))
    expected = _raw(start, end, request=spread.request)
    got = totals[(spread.request.pk,)]
    assert got["samples"] == expected["samples"] and got["util_samples"] == expected["util_samples"]
    assert got["util_weighted"] == pytest.approx(expected["util_weighted"])
    assert got["energy"] == pytest.approx(expected["energy"])
    idle = totals[(None,)]
    assert idle["samples"] == _raw(start, end, request=None)["samples"] and idle["util_samples"] == 0


def test_a_replaced_hour_is_followed_and_a_second_refresh_changes_nothing(spread: DemoOrg) -> None:
    oct_2 = datetime(2026, 10, 2, 10, tzinfo=UTC)
    UtilizationRollup.objects.filter(hour=oct_2).delete()
    rollup(cluster=spread.cluster, hour=oct_2, team=spread.team, request=spread.request, gpu_uuid="GPU-Z")
    before = list(MonthlyUsage.objects.order_by("month", "is_mig", "request_id").values())
    refresh_usage_aggregates(cluster_id=spread.cluster.pk, start=oct_2, end=oct_2 + timedelta(hours=1))
    after = list(MonthlyUsage.objects.order_by("month", "is_mig", "request_id").values())
    assert [{**r, "id": 0} for r in before] == [{**r, "id": 0} for r in after]
    month = (datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC))
    assert (
        usage_totals(start=month[0], end=month[1], by=("request_id",))[(spread.request.pk,)]["samples"]
        == _raw(*month, request=spread.request)["samples"]
    )


def test_the_chargeback_utilization_per_request_comes_from_the_totals(spread: DemoOrg) -> None:
    start, end = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 10, 3, 12, tzinfo=UTC)
    util, energy = usage_by_request(start=start, end=end)[spread.request.pk]
    raw = _raw(start, end, request=spread.request)
    assert util == pytest.approx(raw["util_weighted"] / raw["util_samples"])
    assert energy == pytest.approx(raw["energy"])


def test_grouping_by_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValueError, match="namespace"):
        usage_totals(start=SEP_29, end=SEP_29 + timedelta(days=1), by=("namespace",))


LAST_ROLLUP = SEP_29 + timedelta(days=5, hours=23)  # Oct 4, 23:00: the fixture's last hour


@pytest.mark.parametrize(
    ("start", "by", "stored", "reads"),
    [
        (datetime(2026, 10, 1, tzinfo=UTC), ("request_id",), "billing_monthlyusage", 1),  # the month so far
        (datetime(2026, 10, 2, tzinfo=UTC), ("request_id",), "billing_dailyusage", 2),  # days, then the day so far
        (datetime(2026, 10, 4, tzinfo=UTC), ("team_id", "is_mig"), "billing_dailyusage", 1),  # the day so far
        (datetime(2026, 10, 1, tzinfo=UTC), ("request_id", "day"), "billing_dailyusage", 2),  # by day: no month
        (SEP_29, ("cluster_id", "gpu_model_name"), "billing_monthlyusage", 2),  # September's days, October so far
    ],
)
def test_a_range_up_to_now_reads_its_last_day_or_month_from_the_totals(
    spread: DemoOrg, start: datetime, by: tuple[str, ...], stored: str, reads: int, django_assert_num_queries
) -> None:
    # "Now" is after the last rollup: the day (or month) so far is its stored total, not its device-hours.
    end = LAST_ROLLUP + timedelta(minutes=30)
    with django_assert_num_queries(reads) as captured:
        totals = usage_totals(start=start, end=end, by=by)
    statements = " ".join(query["sql"] for query in captured.captured_queries)
    assert "billing_utilizationrollup" not in statements and stored in statements
    expected = _by(start, end, by)
    assert totals.keys() == expected.keys()
    for key, row in expected.items():
        assert totals[key]["samples"] == row["samples"] and totals[key]["util_samples"] == row["util_samples"]
        assert totals[key]["util_weighted"] == pytest.approx(row["util_weighted"])
        assert totals[key]["energy"] == pytest.approx(row["energy"])


@pytest.mark.parametrize("end", [LAST_ROLLUP, LAST_ROLLUP - timedelta(hours=5, minutes=30)])
def test_a_range_ending_before_its_days_last_rollup_reads_that_days_hours(
    spread: DemoOrg, end: datetime, django_assert_num_queries
) -> None:
    # The stored day holds hours after ``end``: the day's hours up to ``end`` are read instead.
    start = datetime(2026, 10, 1, tzinfo=UTC)
    with django_assert_num_queries(3) as captured:
        totals = usage_totals(start=start, end=end, by=("request_id",))
    assert "billing_utilizationrollup" in captured.captured_queries[-1]["sql"]
    assert totals[(spread.request.pk,)]["samples"] == _raw(start, end, request=spread.request)["samples"]
    assert totals[(None,)]["samples"] == _raw(start, end, request=None)["samples"]


def test_the_day_so_far_of_some_teams_counts_only_theirs(spread: DemoOrg) -> None:
    from allocations.models import Team

    end = LAST_ROLLUP + timedelta(minutes=1)
    start = datetime(2026, 10, 4, tzinfo=UTC)
    totals = usage_totals(start=start, end=end, by=("team_id",), teams=Team.objects.filter(pk=spread.team.pk))
    assert totals == {(spread.team.pk,): _by(start, end, ("team_id",))[(spread.team.pk,)]}


def _by(start: datetime, end: datetime, by: tuple[str, ...]) -> dict:
    """The rollups of [start, end) summed in Python, grouped as usage_totals groups them."""
    groups: dict = {}
    for row in rollups_between(start=start, end=end):
        fields = {
            "request_id": row.request_id, "team_id": row.team_id, "cluster_id": row.cluster_id,
            "gpu_model_name": row.gpu_model_name, "is_mig": row.mig_instance != "", "day": row.hour.date(),
        }  # fmt: skip
        into = groups.setdefault(
            tuple(fields[name] for name in by),
            {"samples": 0, "util_weighted": 0.0, "util_samples": 0, "energy": None, "peak_mib": None},
        )
        into["samples"] += row.sample_count
        if row.avg_utilization_pct is not None:
            into["util_weighted"] += row.avg_utilization_pct * row.sample_count
            into["util_samples"] += row.sample_count
        if row.energy_kwh is not None:
            into["energy"] = (into["energy"] or 0.0) + row.energy_kwh
        if row.peak_memory_used_mib is not None:
            into["peak_mib"] = max(into["peak_mib"] or 0.0, row.peak_memory_used_mib)
    return groups
