"""What the approval queue's budget panel (billing/_request_budget.html, ``{% request_budget_panel %}``) shows of a
pending request against its team's month, in each branch, every value escaped."""

from __future__ import annotations

from decimal import Decimal

from django.template.loader import render_to_string

from gpucore.budget import BudgetEffect, MoneyBudgetState


def _effect(*, cost: Decimal | None, budget: Decimal | None, used: Decimal, to_month_end: bool = False) -> BudgetEffect:
    return BudgetEffect(
        hours_this_month=Decimal("36.25"),
        gpu_hours_this_month=Decimal("72.5"),
        cost_this_month=cost,
        month_to_date_gpu_hours=used,
        month_to_date_cost=Decimal("1234.5"),
        budget_gpu_hours=budget,
        runs_to_month_end=to_month_end,
    )


def shown(
    effect: BudgetEffect | None,
    *,
    money_budget: Decimal | None = None,
    money_after: Decimal | None = None,
    currency: str = "USD",
) -> str:
    money = MoneyBudgetState(
        spent=Decimal("1200"),
        budget=money_budget,
        projected=Decimal("2400"),
        thresholds_pct=(50, 80, 100),
        elapsed_hours=Decimal(300),
        month_hours=Decimal(720),
    )
    month_to_date = {"gpu_hours": Decimal("1234.56"), "amount": Decimal("98765.4321"), "currency": currency}
    month_to_date["money"] = money
    context = {"effect": effect, "month_to_date": month_to_date, "money_after": money_after}
    return render_to_string("billing/_request_budget.html", context)


def test_the_teams_month_and_the_requests_share_of_it() -> None:
    html = shown(_effect(cost=Decimal("4321.987"), budget=None, used=Decimal(10), to_month_end=True))
    assert '<div class="budget-effect small">' in html
    assert "Team this month: 1,234.6 GPU-h · 98,765.43 USD" in html
    assert "This request this month: 72.5 GPU-h · 4,321.99 USD" in html
    assert "(36.3 h, no end date: to the month's end)" in html
    assert '<div class="muted">No monthly budget set.</div>' in html
    assert "money-budget-effect" not in html  # no money budget


def test_a_request_without_a_price_shows_no_cost_and_an_ended_one_no_month_end() -> None:
    html = shown(_effect(cost=None, budget=None, used=Decimal(10)))
    assert "This request this month: 72.5 GPU-h\n" in html and "(36.3 h)" in html


def test_the_gpu_hour_budget_left_or_exceeded() -> None:
    fits = shown(_effect(cost=Decimal(0), budget=Decimal(1000), used=Decimal(100)))
    assert "Budget left after it: <strong>827.5</strong> of 1,000.0 GPU-h" in fits
    over = shown(_effect(cost=Decimal(0), budget=Decimal(100), used=Decimal(90)))
    assert '<div class="no">Over budget by 62.5 GPU-h (budget 100.0 GPU-h)</div>' in over


def test_an_unknown_cost_says_why() -> None:
    html = shown(None)
    assert "Its cost this month is unknown (spec frozen before GPU shares were recorded)." in html
    assert "This request this month" not in html


def test_the_money_budget_with_the_request_marked_when_it_goes_over() -> None:
    effect = _effect(cost=Decimal("100"), budget=None, used=Decimal(10))
    within = shown(effect, money_budget=Decimal(5000), money_after=Decimal("4999.99"))
    assert (
        '<div class="money-budget-effect" data-level="ok">Money budget: 1,200.00 USD of 5,000.00 USD; '
        "<span>4,999.99 USD with it</span></div>"
    ) in within
    over = shown(effect, money_budget=Decimal(5000), money_after=Decimal("5000.01"))
    assert '<span class="no">5,000.01 USD with it</span>' in over
    unknown = shown(effect, money_budget=Decimal(5000), money_after=None)
    assert "Money budget: 1,200.00 USD of 5,000.00 USD</div>" in unknown


def test_the_currency_is_escaped() -> None:
    html = shown(None, money_budget=Decimal(5000), currency="<EUR&>")
    assert "98,765.43 &lt;EUR&amp;&gt;" in html and "<EUR&>" not in html
