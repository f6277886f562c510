"""gpucore.budget: a request's GPU-hours and cost this month, and the budget it leaves (hand arithmetic)."""

from datetime import UTC, datetime
from decimal import Decimal

from gpucore.budget import budget_effect, hours_in_month

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
MONTH_END = datetime(2026, 12, 1, tzinfo=UTC)  # 10.5 days = 252 h after NOW


def effect(**overrides):
    values = {
        "gpu_share": Decimal(1),
        "quantity": 1,
        "replicas": 1,
        "monthly_cost": Decimal("5022.40"),  # one H100 at 6.88/h
        "start": NOW,
        "month_end": MONTH_END,
        "duration_hours": Decimal(48),
        "month_to_date_gpu_hours": Decimal(100),
        "month_to_date_cost": Decimal("688.00"),
        "budget_gpu_hours": Decimal(200),
    }
    return budget_effect(**{**values, **overrides})


def test_a_48_hour_request_inside_the_month():
    result = effect()
    assert result.hours_this_month == 48
    assert result.gpu_hours_this_month == 48
    assert result.cost_this_month == Decimal("330.24")  # 5022.40 / 730 x 48
    assert result.budget_left_gpu_hours == 52  # 200 - 100 - 48
    assert result.fits_budget


def test_only_the_hours_in_this_month_count():
    result = effect(duration_hours=Decimal(500))
    assert result.hours_this_month == 252
    assert result.cost_this_month == Decimal("5022.40") / 730 * 252


def test_without_a_duration_the_request_counts_to_the_month_end():
    hours, open_ended = hours_in_month(start=NOW, month_end=MONTH_END, duration_hours=None)
    assert (hours, open_ended) == (252, True)
    expiry = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert hours_in_month(start=NOW, month_end=MONTH_END, duration_hours=None, ends_at=expiry) == (24, False)


def test_a_shared_allocation_counts_its_gpu_share():
    # 4 replicas of a 1g.20gb on a fully partitioned H100 (share 0.25 each): one GPU-hour per hour together.
    result = effect(gpu_share=Decimal("0.25"), replicas=4, duration_hours=Decimal(10))
    assert result.gpu_hours_this_month == 10


def test_over_budget_is_negative_left():
    result = effect(month_to_date_gpu_hours=Decimal(190))
    assert result.budget_left_gpu_hours == -38
    assert not result.fits_budget


def test_no_budget_always_fits_and_no_price_has_no_cost():
    result = effect(budget_gpu_hours=None, monthly_cost=None)
    assert result.budget_left_gpu_hours is None
    assert result.fits_budget
    assert result.cost_this_month is None
