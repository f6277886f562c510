"""What the cost dashboards are asked for: a range of months, a grouping, filters and the idle-capacity toggle.

Read from the page's query string (``?period=month&month=2026-10``, ``?period=quarter&quarter=2026-Q4``,
``?period=custom&from=2026-01&to=2026-06``; ``group``; ``team``, ``pool``, ``gpu_model``, ``strategy``, ``tier``;
``idle=1``). Bad input raises ``DashboardQueryError`` naming the field, which the view answers with a 400.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date
from urllib.parse import urlencode

from gpucore.months import MonthError, add_months, month_range, parse_month, parse_quarter, quarter_label

GROUPS = {"team": "Team", "pool": "Pool", "gpu_model": "GPU model", "strategy": "Strategy", "tier": "SLA tier"}
FILTERS = tuple(GROUPS)
PERIODS = ("month", "quarter", "custom")
MAX_MONTHS = 24  # a custom range: two years of monthly reports at most
TREND_MONTHS = 12  # a single month's cost chart shows the year up to it


class DashboardQueryError(ValueError):
    """A dashboard parameter that cannot be read; the message starts with the parameter's name."""


@dataclass(frozen=True)
class DashboardQuery:
    """The months shown (oldest first), how costs are grouped, the filters in force and whether idle is drawn."""

    period: str
    months: tuple[date, ...]
    group: str = "team"
    filters: Mapping[str, str] = field(default_factory=dict)
    show_idle: bool = False

    @property
    def first(self) -> date:
        return self.months[0]

    @property
    def last(self) -> date:
        return self.months[-1]

    @property
    def trend_months(self) -> tuple[date, ...]:
        """The months of the cost-over-time chart: the range, or the year up to a single month."""
        if self.period == "month":
            return tuple(month_range(add_months(self.last, 1 - TREND_MONTHS), self.last))
        return self.months

    @property
    def label(self) -> str:
        if self.period == "month":
            return f"{self.first:%B %Y}"
        if self.period == "quarter":
            return quarter_label(self.first)
        return f"{self.first:%b %Y} to {self.last:%b %Y}"

    def params(self, **changes: str) -> dict[str, str]:
        """The query string of this view (``changes`` overriding), for links that keep the other controls."""
        values: dict[str, str] = {"period": self.period, "group": self.group}
        if self.period == "month":
            values["month"] = f"{self.first:%Y-%m}"
        elif self.period == "quarter":
            values["quarter"] = quarter_label(self.first)
        else:
            values["from"], values["to"] = f"{self.first:%Y-%m}", f"{self.last:%Y-%m}"
        values.update({name: value for name, value in self.filters.items() if value})
        if self.show_idle:
            values["idle"] = "1"
        values.update(changes)
        return {name: value for name, value in values.items() if value}

    def url(self, **changes: str) -> str:
        return "?" + urlencode(self.params(**changes))

    def step(self, direction: int) -> tuple[str, str]:
        """The link to the period before (``direction`` -1) or after (1) this one, of the same kind, and its words:
        a month steps by a month, a quarter by a quarter, a custom range by its own length."""
        if self.period == "quarter":
            return f"{'Previous' if direction < 0 else 'Next'} quarter", self.url(
                quarter=quarter_label(add_months(self.first, 3 * direction))
            )
        if self.period == "custom":
            length = len(self.months)
            first, last = add_months(self.first, length * direction), add_months(self.last, length * direction)
            words = f"{'Previous' if direction < 0 else 'Next'} {length} months"
            return words, self.url(**{"from": f"{first:%Y-%m}", "to": f"{last:%Y-%m}"})
        month = add_months(self.first, direction)
        return f"{'Previous' if direction < 0 else 'Next'} month", self.url(month=f"{month:%Y-%m}")

    def drill_down(self) -> Callable[[date, str], str]:
        """A maker of links to one month with one group's value as a filter: the requests behind one bar.

        The query string's fixed part is encoded once; a chart of 50 teams x 12 months makes 600 links.
        """
        fixed = replace(self, period="month", months=(self.last,)).params()
        fixed.pop("month", None)
        fixed.pop(self.group, None)
        prefix = "?" + urlencode(fixed)

        def link(month: date, group_value: str) -> str:
            return f"{prefix}&{urlencode({'month': f'{month:%Y-%m}', self.group: group_value})}#panel-cost-per-request"

        return link


def _month(params: Mapping[str, str], name: str, default: date) -> date:
    value = params.get(name) or ""
    if not value:
        return default
    try:
        return parse_month(value)
    except MonthError as exc:
        raise DashboardQueryError(f"{name}: {exc}") from exc


def parse_dashboard_query(params: Mapping[str, str], *, this_month: date, may_see_idle: bool) -> DashboardQuery:
    """The dashboard query from request parameters; defaults: this month, grouped by team, no filter, no idle."""
    period = params.get("period") or ("custom" if params.get("from") or params.get("to") else "month")
    if params.get("quarter") and not params.get("period"):
        period = "quarter"
    if period not in PERIODS:
        raise DashboardQueryError(f"period: Use one of {', '.join(PERIODS)}, not {period!r}.")
    if period == "month":
        months = [_month(params, "month", this_month)]
    elif period == "quarter":
        text = params.get("quarter") or quarter_label(this_month)
        try:
            first = parse_quarter(text)
        except MonthError as exc:
            raise DashboardQueryError(f"quarter: {exc}") from exc
        months = month_range(first, add_months(first, 2))
    else:
        last = _month(params, "to", this_month)
        first = _month(params, "from", add_months(last, -2))
        months = month_range(first, last)
        if not months:
            raise DashboardQueryError("from: The first month must not come after the last (to).")
        if len(months) > MAX_MONTHS:
            raise DashboardQueryError(f"to: A custom range covers at most {MAX_MONTHS} months, not {len(months)}.")
    group = params.get("group") or "team"
    if group not in GROUPS:
        raise DashboardQueryError(f"group: Use one of {', '.join(GROUPS)}, not {group!r}.")
    filters = {name: params[name].strip()[:100] for name in FILTERS if (params.get(name) or "").strip()}
    return DashboardQuery(
        period=period,
        months=tuple(months),
        group=group,
        filters=filters,
        show_idle=may_see_idle and params.get("idle") == "1",
    )
