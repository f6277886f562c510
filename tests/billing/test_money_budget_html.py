"""What a team's money budget shows (``{% money_budget state currency %}``) at each level: spend, budget, projection,
the bar and its label, the level's sentence and the alert thresholds, every value escaped."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.template import Context, Template

from gpucore.budget import MoneyBudgetState


def shown(*, spent: str, budget: str | None, projected: str, currency: str = "USD", thresholds=(50, 80, 100)) -> str:
    state = MoneyBudgetState(
        spent=Decimal(spent),
        budget=None if budget is None else Decimal(budget),
        projected=Decimal(projected),
        thresholds_pct=thresholds,
        elapsed_hours=Decimal(100),
        month_hours=Decimal(720),
    )
    template = Template("{% load billing_panels %}{% money_budget state currency %}")
    return template.render(Context({"state": state, "currency": currency}))


def test_without_a_budget_only_the_spend_is_shown() -> None:
    html = shown(spent="1200.5", budget=None, projected="4000")
    assert '<div class="money-budget level-none" data-level="none">' in html
    assert "<strong>1,200.50 USD</strong> spent this month" in html and "(no money budget set)" in html
    assert 'class="bar' not in html and "Alerts at" not in html


@pytest.mark.parametrize(
    ("spent", "projected", "level", "bar", "sentence"),
    [
        ("1200", "2400", "ok", "bar", '<span class="yes">Within budget.</span>'),
        ("1200", "7000", "projected_over", "bar warn", "On course to exceed the budget by month end."),
        ("4200", "4600", "warning", "bar warn", '<span class="warn-text">80 % threshold crossed.</span>'),
        ("5000", "9000", "over", "bar over", '<span class="no">Budget spent.</span>'),
    ],
)
def test_each_level_shows_its_bar_and_sentence(spent: str, projected: str, level: str, bar: str, sentence: str) -> None:
    html = shown(spent=spent, budget="5000", projected=projected)
    used = round(Decimal(spent) / 50)
    assert f'<div class="money-budget level-{level}" data-level="{level}">' in html
    assert f"of a 5,000.00 USD budget\n    ({used} %);" in html
    assert f'<div class="{bar}" role="img" aria-label="{used} % of the monthly budget spent">' in html
    assert f'<span style="width: {used}%"></span>' in html
    assert sentence in html
    assert '<span class="muted">Alerts at 50, 80, 100 %.</span>' in html


def test_percentages_group_thousands_and_values_are_escaped() -> None:
    html = shown(spent="9999999.994", budget="5000", projected="12345678", currency="<E&R>")
    assert "<strong>9,999,999.99 &lt;E&amp;R&gt;</strong> of a 5,000.00 &lt;E&amp;R&gt; budget" in html
    assert "(200,000 %)" in html and "(246,914 %)" in html
    assert "<E&R>" not in html
