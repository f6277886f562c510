"""A team's money budget built in Python (billing_panels.money_budget_html, ``{% money_budget %}``) is what its include
printed, byte for byte, at every level."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from django.template import Context, Template

from billing.templatetags.billing_panels import money_budget_html
from gpucore.budget import MoneyBudgetState

# templates/billing/_money_budget.html as it was before money_budget_html.
_BUDGET_AS_THE_INCLUDE_PRINTED_IT = """{% comment %}A team's money budget this month. Context: state (gpucore.budget.MoneyBudgetState), currency.{% endcomment %}
{% with s=state %}
<div class="money-budget level-{{ s.level }}" data-level="{{ s.level }}">
  {% if s.budget is None %}
  <p><strong>{{ s.spent|money:currency }}</strong> spent this month <span class="muted">(no money budget set)</span>.</p>
  {% else %}
  <p><strong>{{ s.spent|money:currency }}</strong> of a {{ s.budget|money:currency }} budget
    {% if s.used_pct is not None %}({{ s.used_pct|floatformat:"0g" }} %){% endif %};
    at the last day's pace <strong>{{ s.projected|money:currency }}</strong> by month end{% if s.projected_pct is not None %} ({{ s.projected_pct|floatformat:"0g" }} %){% endif %}.</p>
  <div class="bar{% if s.level == 'over' %} over{% elif s.level == 'warning' or s.level == 'projected_over' %} warn{% endif %}" role="img" aria-label="{{ s.used_pct|floatformat:0 }} % of the monthly budget spent"><span style="width: {{ s.used_pct|floatformat:0 }}%"></span></div>
  <p class="small budget-level">
    {% if s.level == "over" %}<span class="no">Budget spent.</span>
    {% elif s.level == "warning" %}<span class="warn-text">{{ s.crossed_pct|last }} % threshold crossed.</span>
    {% elif s.level == "projected_over" %}<span class="warn-text">On course to exceed the budget by month end.</span>
    {% else %}<span class="yes">Within budget.</span>{% endif %}
    <span class="muted">Alerts at {{ s.thresholds_pct|join:", " }} %.</span>
  </p>
  {% endif %}
</div>
{% endwith %}
"""  # noqa: E501

BUDGETS = [None, Decimal(0), Decimal("5000"), Decimal("1234567.891")]
SPENT = [Decimal(0), Decimal("1200.5"), Decimal("4200"), Decimal("4600"), Decimal("5000"), Decimal("9999999.994")]
PROJECTED = [Decimal(0), Decimal("4999.99"), Decimal("7000"), Decimal("12345678")]
THRESHOLDS = [(), (50, 80, 100), (75,), (90, 120)]


@pytest.mark.parametrize("thresholds", THRESHOLDS)
def test_the_budget_is_what_the_include_printed(thresholds) -> None:
    template = Template(_BUDGET_AS_THE_INCLUDE_PRINTED_IT)
    levels = set()
    for budget, spent, projected, currency in itertools.product(BUDGETS, SPENT, PROJECTED, ["USD", "", "<E&R>"]):
        state = MoneyBudgetState(
            spent=spent,
            budget=budget,
            projected=projected,
            thresholds_pct=thresholds,
            elapsed_hours=Decimal(100),
            month_hours=Decimal(720),
        )
        levels.add(state.level)
        expected = template.render(Context({"state": state, "currency": currency}))
        assert money_budget_html(state, currency) == expected, (budget, spent, projected, currency)
    assert len(levels) >= (5 if thresholds and min(thresholds) < 100 else 4)
