"""Waste on the bill: held vs busy GPU-hours and the idle part's cost, per request and in total."""

from __future__ import annotations

from decimal import Decimal

from gpucore.waste import ChargedHours, waste_by_request


def line(request, held, util, amount, name="job"):
    return ChargedHours(request, name, Decimal(held), util, Decimal(amount))


def test_busy_hours_are_held_hours_times_utilization_and_the_idle_part_costs_the_rest():
    rows, total = waste_by_request([line(7, "10", 20.0, "50.00")])

    (waste,) = rows
    assert (waste.held_gpu_hours, waste.busy_gpu_hours, waste.idle_gpu_hours) == (10, 2, 8)
    assert waste.idle_cost == Decimal("40.00") and waste.busy_pct == 20.0
    assert total.idle_cost == Decimal("40.00")


def test_a_request_with_two_price_book_lines_is_one_row_and_rows_come_most_idle_cost_first():
    rows, total = waste_by_request(
        [line(1, "4", 50.0, "8.00"), line(2, "10", 90.0, "20.00"), line(1, "6", 50.0, "18.00")]
    )

    assert [(w.request, w.held_gpu_hours, w.idle_cost) for w in rows] == [
        (1, 10, Decimal("13.000")),
        (2, 10, Decimal("2.000")),
    ]
    assert (total.held_gpu_hours, total.amount, total.idle_cost) == (20, Decimal("46.00"), Decimal("15.000"))


def test_an_unmeasured_line_is_neither_busy_nor_idle():
    rows, total = waste_by_request([line(3, "5", None, "10.00"), line(None, "2", None, "4.00", name="imported")])

    assert all(w.measured_gpu_hours == 0 and w.idle_cost == 0 and w.busy_pct is None for w in rows)
    assert total.held_gpu_hours == 7 and total.idle_gpu_hours == 0


def test_utilization_over_100_is_all_busy():
    (waste,), _ = waste_by_request([line(4, "3", 130.0, "6.00")])
    assert waste.idle_cost == 0 and waste.busy_gpu_hours == 3
