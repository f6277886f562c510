"""The capacity forecast (gpucore.forecast): a hand-computed trend, run-out dates, and flat or falling trends."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucore.forecast import (
    Trend,
    daily_means,
    forecast,
    forecast_as_json,
    forecast_from_json,
    linear_trend,
    run_out,
    step_series,
)

T0 = datetime(2026, 10, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def test_least_squares_by_hand() -> None:
    # x = 0, 1, 2, 3 days; y = 1, 3, 2, 6: mean x 1.5, mean y 3; Sxx = 2.25 + 0.25 + 0.25 + 2.25 = 5;
    # Sxy = (-1.5)(-2) + (-0.5)(0) + (0.5)(-1) + (1.5)(3) = 7; slope 7 / 5; intercept 3 - 1.4 x 1.5 = 0.9.
    trend = linear_trend([(T0 + DAY * i, y) for i, y in enumerate([1, 3, 2, 6])])
    assert trend is not None
    assert trend.slope_per_day == pytest.approx(7 / 5)
    assert trend.intercept == pytest.approx(3 - 1.4 * 1.5)
    assert trend.at(T0 + DAY * 10) == pytest.approx(0.9 + 14)


def test_one_point_has_no_trend() -> None:
    assert linear_trend([(T0, 5.0)]) is None
    assert linear_trend([]) is None


def test_run_out_date_where_the_trend_crosses_capacity() -> None:
    # 10 units growing 2 a day from T0, capacity 16: reached after 3 days.
    trend = linear_trend([(T0 + DAY * i, 10 + 2 * i) for i in range(7)])
    assert run_out(trend, capacity=16, now=T0 + DAY * 2) == T0 + DAY * 3


@pytest.mark.parametrize("values", [[8, 8, 8, 8], [12, 10, 8, 6]])
def test_flat_or_falling_trend_never_runs_out(values: list[float]) -> None:
    trend = linear_trend([(T0 + DAY * i, v) for i, v in enumerate(values)])
    assert run_out(trend, capacity=16, now=T0 + DAY * 4) is None


def test_a_near_flat_trend_whose_run_out_no_calendar_holds_never_runs_out() -> None:
    # A constant series read from float sums can fit a slope of 1e-15 a day: capacity 10^16 days away.
    trend = Trend(origin=T0, intercept=50.0, slope_per_day=1e-15)
    assert run_out(trend, capacity=100.0, now=T0) is None
    steady = [(T0 + timedelta(hours=h), 50.1) for h in range(24 * 14)]
    assert forecast(steady, now=T0 + DAY * 14, capacity=100.0).run_out_at is None


@settings(max_examples=200, deadline=None)
@given(
    intercept=st.floats(min_value=-1e6, max_value=1e6),
    slope=st.floats(min_value=1e-300, max_value=1e6),
    capacity=st.floats(min_value=-1e6, max_value=1e6),
)
def test_run_out_is_a_date_or_never_for_any_rising_trend(intercept: float, slope: float, capacity: float) -> None:
    trend = Trend(origin=T0, intercept=intercept, slope_per_day=slope)
    when = run_out(trend, capacity=capacity, now=T0)
    assert when is None or when >= T0


def test_already_over_capacity_runs_out_now() -> None:
    trend = linear_trend([(T0 + DAY * i, 20 - i) for i in range(4)])
    assert run_out(trend, capacity=16, now=T0 + DAY * 3) == T0 + DAY * 3


def test_daily_means_skip_days_without_points() -> None:
    end = T0 + DAY * 3
    hourly = [(T0 + timedelta(hours=h), float(h % 24)) for h in range(24)]  # day 0 only
    hourly += [(T0 + DAY * 2 + timedelta(hours=h), 4.0) for h in range(24)]
    means = daily_means(hourly, end=end, days=3)
    assert means == [(T0 + DAY / 2, 11.5), (T0 + DAY * 2 + DAY / 2, 4.0)]


def test_forecast_projects_30_days_from_hourly_steps() -> None:
    now = T0 + DAY * 7
    # One more unit held each day: 1 unit on day 0 ... 7 on day 6 (daily means 1..7), capacity 20.
    spans = [(T0 + DAY * i, None, 1.0) for i in range(7)]
    hourly = step_series(spans, start=T0, end=now)
    assert hourly[0] == (T0, 1.0) and hourly[-1] == (now - timedelta(hours=1), 7.0)
    result = forecast(hourly, now=now, capacity=20)
    assert result.trend is not None and result.trend.slope_per_day == pytest.approx(1.0)
    assert len(result.projection) == 31 and result.projection[0][0] == now
    # Daily mean i + 1 at day i + 0.5: value 20 at day 19.5 from T0.
    assert result.run_out_at == T0 + DAY * 19.5
    assert result.days_to_run_out == pytest.approx(12.5)
    assert result.runs_out_within_horizon
    assert result.current == 7.0


def test_a_falling_forecast_stops_at_zero() -> None:
    now = T0 + DAY * 7
    spans = [(T0, T0 + DAY * (7 - i), 1.0) for i in range(7)]  # 7 units held on day 0, one fewer each day
    result = forecast(step_series(spans, start=T0, end=now), now=now, capacity=20)
    assert result.trend is not None and result.trend.slope_per_day == pytest.approx(-1.0)
    assert result.projection[0][1] == pytest.approx(0.5) and result.projection[1][1] == 0.0
    assert min(value for _, value in result.projection) == 0.0 and result.projected_end == 0.0
    assert result.run_out_at is None


def test_forecast_without_history_has_no_trend() -> None:
    result = forecast([], now=T0, capacity=10)
    assert result.trend is None and result.projection == () and result.run_out_at is None
    assert result.current is None and result.days_to_run_out is None


def _held_at_every_hour(spans, *, start, end):
    """The definition: at each hour start, the sum of what every holding holds then."""
    series, hour = [], start
    while hour < end:
        held = sum(amount for since, until, amount in spans if since <= hour and (until is None or until > hour))
        series.append((hour, float(held)))
        hour += timedelta(hours=1)
    return series


_MINUTES = st.integers(min_value=-3 * 24 * 60, max_value=10 * 24 * 60)


@settings(max_examples=300, deadline=None)
@given(
    spans=st.lists(
        st.tuples(_MINUTES, st.one_of(st.none(), _MINUTES), st.integers(min_value=-4, max_value=64)), max_size=40
    ),
    offset=st.integers(min_value=0, max_value=59),
    hours=st.integers(min_value=0, max_value=8 * 24),
)
def test_step_series_equals_the_sum_at_every_hour(spans, offset, hours) -> None:
    # Holdings starting and ending on and off the hour, before, inside and after the window, some ending before they
    # start; whole amounts (as pools hold units), negative ones included.
    start = T0 + timedelta(minutes=offset)
    end = start + timedelta(hours=hours, minutes=offset)
    held = [
        (T0 + timedelta(minutes=since), None if until is None else T0 + timedelta(minutes=until), float(amount))
        for since, until, amount in spans
    ]
    assert step_series(held, start=start, end=end) == _held_at_every_hour(held, start=start, end=end)


def test_step_series_with_fractional_amounts_sums_them_per_hour_as_the_definition() -> None:
    spans = [(T0, None, 0.1), (T0 + timedelta(hours=1), T0 + timedelta(hours=3), 0.2), (T0, None, float("nan"))]
    got = step_series(spans[:2], start=T0, end=T0 + DAY)
    assert got == _held_at_every_hour(spans[:2], start=T0, end=T0 + DAY)
    assert all(value != value for _, value in step_series(spans, start=T0, end=T0 + timedelta(hours=2)))  # NaN


def test_a_forecast_reads_back_from_json_as_it_was() -> None:
    now = datetime(2026, 11, 29, 10, tzinfo=UTC)
    hourly = [(now - timedelta(hours=n), 3.0 + n / 7) for n in range(1, 24 * 7)]
    for item in (forecast(hourly, now=now, capacity=16.0), forecast([], now=now)):
        assert forecast_from_json(json.loads(json.dumps(forecast_as_json(item)))) == item
