"""A team's money budget: thresholds crossed, the run-rate projection to month end, and the level a page shows."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from gpucore.budget import BudgetLevel, money_budget_state, run_rate_projection, thresholds_crossed

NOV = datetime(2026, 11, 1, tzinfo=UTC)
DEC = datetime(2026, 12, 1, tzinfo=UTC)


def test_thresholds_are_crossed_at_exactly_their_share_of_the_budget() -> None:
    assert thresholds_crossed(spent=Decimal("499.99"), budget=Decimal(1000), thresholds_pct=[80, 50, 100]) == ()
    assert thresholds_crossed(spent=Decimal("500"), budget=Decimal(1000), thresholds_pct=[80, 50, 100]) == (50,)
    assert thresholds_crossed(spent=Decimal("1000"), budget=Decimal(1000), thresholds_pct=[50, 80, 100]) == (
        50,
        80,
        100,
    )


def test_a_zero_budget_is_crossed_by_any_spend_and_by_none_without() -> None:
    assert thresholds_crossed(spent=Decimal("0.01"), budget=Decimal(0), thresholds_pct=[50, 100]) == (50, 100)
    assert thresholds_crossed(spent=Decimal(0), budget=Decimal(0), thresholds_pct=[50, 100]) == ()


def test_the_projection_extrapolates_the_recent_pace_to_the_months_end() -> None:
    # 240 spent; the last 24 hours cost 72 (3 an hour); 100 hours left: 240 + 300.
    assert (
        run_rate_projection(spent=Decimal(240), recent_spend=Decimal(72), recent_hours=Decimal(24),
                            remaining_hours=Decimal(100))
        == 540
    )  # fmt: skip
    # Within the first hour there is no pace yet; after the month the projection is what was spent.
    assert (
        run_rate_projection(
            spent=Decimal(5), recent_spend=Decimal(5), recent_hours=Decimal("0.5"), remaining_hours=Decimal(719)
        )
        == 5
    )
    assert (
        run_rate_projection(
            spent=Decimal(5), recent_spend=Decimal(1), recent_hours=Decimal(24), remaining_hours=Decimal(0)
        )
        == 5
    )


def test_a_job_started_yesterday_is_projected_at_yesterdays_burn_not_the_months_average() -> None:
    now = datetime(2026, 11, 21, tzinfo=UTC)  # 480 of 720 hours in, 240 left
    state = money_budget_state(
        spent=Decimal(240), budget=Decimal(1000), month_start=NOV, month_end=DEC, now=now, recent_spend=Decimal(240)
    )
    assert state.projected == 240 + 240 * 240 / 24  # 10 an hour for 240 more hours: 2,640
    average = money_budget_state(spent=Decimal(240), budget=Decimal(1000), month_start=NOV, month_end=DEC, now=now)
    assert average.projected == 360  # the month's average, 0.5 an hour, without the recent pace


def test_a_month_under_budget_now_but_over_at_its_pace_is_projected_over() -> None:
    state = money_budget_state(
        spent=Decimal(400),
        budget=Decimal(1000),
        month_start=NOV,
        month_end=DEC,
        now=datetime(2026, 11, 8, 12, tzinfo=UTC),  # 180 hours in
    )
    assert state.projected == 1600
    assert state.projected_pct == 160
    assert state.crossed_pct == ()
    assert state.level == BudgetLevel.PROJECTED_OVER


def test_levels_from_no_budget_to_over() -> None:
    def level(spent: str, budget: str | None) -> BudgetLevel:
        return money_budget_state(
            spent=Decimal(spent),
            budget=None if budget is None else Decimal(budget),
            month_start=NOV,
            month_end=DEC,
            now=DEC,  # the whole month has passed: the projection is the spend
        ).level

    assert level("900", None) == BudgetLevel.NONE
    assert level("100", "1000") == BudgetLevel.OK
    assert level("800", "1000") == BudgetLevel.WARNING
    assert level("999.99", "1000") == BudgetLevel.WARNING
    assert level("1000", "1000") == BudgetLevel.OVER  # the whole budget spent
    assert level("0", "0") == BudgetLevel.OK
