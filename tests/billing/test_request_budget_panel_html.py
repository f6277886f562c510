"""The approval queue's budget panel built in Python (billing_panels.request_budget_panel_html) is what its inclusion
template printed, byte for byte, in every branch."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from django.template import Context, Template

from billing.templatetags.billing_panels import request_budget_panel_html
from gpucore.budget import BudgetEffect, MoneyBudgetState

# templates/billing/_request_budget.html as it was before request_budget_panel_html.
_PANEL_AS_THE_TEMPLATE_PRINTED_IT = """{% comment %}A pending request against its team's month.{% endcomment %}
<div class="budget-effect small">
  <div>Team this month: {{ month_to_date.gpu_hours|gpu_hours }} GPU-h · {{ month_to_date.amount|money:month_to_date.currency }}</div>
  {% if effect %}
  <div>This request this month: {{ effect.gpu_hours_this_month|gpu_hours }} GPU-h{% if effect.cost_this_month is not None %} · {{ effect.cost_this_month|money:month_to_date.currency }}{% endif %}
    <span class="muted">({{ effect.hours_this_month|floatformat:"-1" }} h{% if effect.runs_to_month_end %}, no end date: to the month's end{% endif %})</span></div>
  {% if effect.budget_gpu_hours is None %}
  <div class="muted">No monthly budget set.</div>
  {% elif effect.fits_budget %}
  <div>Budget left after it: <strong>{{ effect.budget_left_gpu_hours|gpu_hours }}</strong> of {{ effect.budget_gpu_hours|gpu_hours }} GPU-h</div>
  {% else %}
  <div class="no">Over budget by {{ effect.over_budget_gpu_hours|gpu_hours }} GPU-h (budget {{ effect.budget_gpu_hours|gpu_hours }} GPU-h)</div>
  {% endif %}
  {% else %}
  <div class="muted">Its cost this month is unknown (spec frozen before GPU shares were recorded).</div>
  {% endif %}
  {% with money=month_to_date.money %}{% if money.budget is not None %}
  <div class="money-budget-effect" data-level="{{ money.level }}">Money budget: {{ money.spent|money:month_to_date.currency }} of {{ money.budget|money:month_to_date.currency }}{% if money_after is not None %}; <span{% if money_after > money.budget %} class="no"{% endif %}>{{ money_after|money:month_to_date.currency }} with it</span>{% endif %}</div>
  {% endif %}{% endwith %}
</div>
"""  # noqa: E501


def _effect(*, cost: Decimal | None, budget: Decimal | None, used: Decimal, to_month_end: bool) -> BudgetEffect:
    return BudgetEffect(
        hours_this_month=Decimal("36.25"),
        gpu_hours_this_month=Decimal("72.5"),
        cost_this_month=cost,
        month_to_date_gpu_hours=used,
        month_to_date_cost=Decimal("1234.5"),
        budget_gpu_hours=budget,
        runs_to_month_end=to_month_end,
    )


def _money(budget: Decimal | None, spent: Decimal) -> MoneyBudgetState:
    return MoneyBudgetState(
        spent=spent,
        budget=budget,
        projected=spent * 2,
        thresholds_pct=(50, 80, 100),
        elapsed_hours=Decimal(300),
        month_hours=Decimal(720),
    )


EFFECTS = [
    None,
    *(
        _effect(cost=cost, budget=budget, used=used, to_month_end=to_month_end)
        for cost, (budget, used), to_month_end in itertools.product(
            [None, Decimal("0"), Decimal("4321.987")],
            [(None, Decimal(10)), (Decimal(1000), Decimal(100)), (Decimal(100), Decimal(90))],
            [False, True],
        )
    ),
]
MONTHS = [
    (currency, _money(budget, spent), money_after)
    for currency, (budget, spent, money_after) in itertools.product(
        ["USD", "", "<EUR&>"],
        [
            (None, Decimal("12.5"), None),
            (Decimal(5000), Decimal("1200"), None),
            (Decimal(5000), Decimal("1200"), Decimal("4999.99")),
            (Decimal(5000), Decimal("4800"), Decimal("5000.01")),
        ],
    )
]


@pytest.mark.parametrize("effect", EFFECTS)
def test_the_panel_is_what_the_template_printed(effect) -> None:
    template = Template(_PANEL_AS_THE_TEMPLATE_PRINTED_IT)
    for currency, money, money_after in MONTHS:
        month_to_date = {"gpu_hours": Decimal("1234.56"), "amount": Decimal("98765.4321"), "currency": currency}
        month_to_date["money"] = money
        context = {"effect": effect, "month_to_date": month_to_date, "money_after": money_after}
        expected = template.render(Context(context))
        assert request_budget_panel_html(effect=effect, month_to_date=month_to_date, money_after=money_after) == (
            expected
        )
