"""The month's chargeback as curves of time: read at any moment, the same figures as a chargeback up to it (pure)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal as D

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucore.budget import spend_between
from gpucore.chargeback import Allocation, PricePeriod, compute_chargeback
from gpucore.month_curves import CumulativeCurve, MonthCurves

NOV = datetime(2026, 11, 1, tzinfo=UTC)
DEC = datetime(2026, 12, 1, tzinfo=UTC)
CAPACITY = {"H100-80GB": 8, "A100-40GB": 4}
PERIODS = (
    PricePeriod(starts=NOV, version=1, gpu_rates={"h100-80gb": D("2.00")}, sla_multipliers={"tier1": D("1.5")}),
    # Mid-month: a new book, which also prices the A100 (unpriced before it: no rate, no fallback)
    PricePeriod(
        starts=NOV + timedelta(days=12),
        version=2,
        gpu_rates={"h100-80gb": D("2.40"), "a100-40gb": D("1.10")},
        sla_multipliers={"tier1": D("1.2")},
    ),
)


def hour(n: int) -> datetime:
    return NOV + timedelta(hours=n)


def test_a_curve_accrues_each_span_at_its_rate_and_nothing_outside_it() -> None:
    curve = CumulativeCurve.of_spans(
        [(hour(10), hour(20), D(2)), (hour(15), hour(25), D(1)), (hour(30), hour(30), D(9))]
    )

    assert curve.at(hour(0)) == 0
    assert curve.at(hour(10)) == 0
    assert curve.at(hour(15)) == 10
    assert curve.at(hour(20)) == 25
    assert curve.at(hour(25)) == 30
    assert curve.at(hour(40)) == 30  # an empty span adds nothing
    assert curve.between(hour(14), hour(16)) == 2 + 3
    assert curve.between(hour(16), hour(14)) == 0
    assert CumulativeCurve.of_spans([]).at(hour(5)) == 0


allocations = st.lists(
    st.builds(
        lambda n, team, model, strategy, units, start, length, tier: Allocation(
            key=f"request:{n}",
            team=team,
            name=f"job-{n}",
            gpu_model=model,
            strategy=strategy,
            resource_name="nvidia.com/gpu",
            quantity=units,
            time_slice_replicas=4 if strategy == "time-slicing" else None,
            start=hour(start) - timedelta(seconds=n),  # odd seconds: hours that are not whole
            end=None if length is None else hour(start + length),
            sla_tier=tier,
            tier_multiplier=D("1.3"),
        ),
        n=st.integers(0, 10_000),
        team=st.sampled_from(["vision", "nlp", "speech"]),
        model=st.sampled_from(["H100-80GB", "A100-40GB"]),
        strategy=st.sampled_from(["dedicated", "time-slicing"]),
        units=st.integers(1, 4),
        start=st.integers(-100, 700),
        length=st.none() | st.integers(1, 400),
        tier=st.sampled_from([None, "tier1", "tier2"]),
    ),
    max_size=12,
    unique_by=lambda a: a.key,
)


@settings(max_examples=60, deadline=None)
@given(allocs=allocations, moment=st.integers(-5, 740), share_idle=st.booleans())
def test_read_at_any_moment_the_curves_give_the_chargeback_up_to_it(allocs, moment, share_idle) -> None:
    now = hour(moment) + timedelta(seconds=17)
    whole = compute_chargeback(
        allocs, window_start=NOV, window_end=DEC, periods=PERIODS, capacity_gpus=CAPACITY, share_idle=share_idle
    )
    curves = MonthCurves.of_chargeback(whole, capacity_gpus=CAPACITY, periods=PERIODS)
    since = max(NOV, now - timedelta(hours=24))

    read = curves.so_far(now, teams=["vision", "nlp", "speech"], recent_since=since)
    end = min(DEC, max(now, NOV))
    expected = compute_chargeback(
        allocs, window_start=NOV, window_end=end, periods=PERIODS, capacity_gpus=CAPACITY, share_idle=share_idle
    )

    def close(a: D, b: D) -> bool:
        return abs(a - b) < D("1e-18")

    for team in ("vision", "nlp", "speech"):
        charge = expected.teams.get(team)
        got = read.teams[team]
        assert close(got.gpu_hours, charge.allocated_gpu_hours if charge else D(0))
        assert close(got.amount, charge.amount if charge else D(0))
        assert close(got.idle_share, charge.idle_share if charge else D(0))
        assert close(got.recent_amount, spend_between(charge.lines, start=since, end=end) if charge else D(0))
    assert set(read.idle_cost) == set(expected.idle_cost)
    for model, idle in expected.idle_cost.items():
        assert close(read.idle_cost[model], idle)
    assert read.idle_shared == share_idle


def test_whole_hours_read_exactly() -> None:
    # Two dedicated H100s since the 6th: 2 x 120 h by the 11th, at 2.00 then 2.40 from the 13th.
    alloc = Allocation(
        key="request:1",
        team="vision",
        name="job",
        gpu_model="H100-80GB",
        strategy="dedicated",
        resource_name="nvidia.com/gpu",
        quantity=2,
        start=hour(5 * 24),
        end=None,
    )
    whole = compute_chargeback([alloc], window_start=NOV, window_end=DEC, periods=PERIODS, capacity_gpus={})
    curves = MonthCurves.of_chargeback(whole, capacity_gpus={}, periods=PERIODS)

    assert curves.so_far(hour(10 * 24)).teams["vision"].gpu_hours == D("240")
    assert curves.so_far(hour(10 * 24)).teams["vision"].amount == D("480.00")
    assert curves.so_far(hour(13 * 24)).teams["vision"].amount == D("480.00") + 2 * 48 * D("2.00") + 2 * 24 * D("2.40")
    assert curves.so_far(hour(2 * 24)).teams["vision"].total == 0  # before it started: nothing
