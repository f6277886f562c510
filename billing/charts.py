"""Every plotly figure of the billing pages: cost dashboards and capacity forecast. Views call it, never selectors.

The pages draw them with the plotly.js served from our static files (``static/js/plotly-cartesian.min.js``, no
CDN). Each cost figure is drawn from the same ``(columns, rows)`` table shown under it and served as CSV, so a chart
never says what its table does not; the forecast figures draw ``PoolForecast`` histories and projections
(``billing.utilization.selectors.pool_forecasts``). Every figure is written as plain plotly JSON, not through
plotly's figure objects: their validators took longer per view than reading the data behind the charts, so the
tests hand each figure to them instead (``tests/billing/test_chart_figures.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from plotly.colors import sequential

from billing.costs.dashboards import IDLE_LABEL, Table

if TYPE_CHECKING:
    from billing.utilization.selectors import PoolForecast

# Twenty hues far apart (Tableau 10 without its grey, then darker and lighter distinct ones), so two names that
# share a chart rarely look alike; grey is left for idle capacity.
PALETTE = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#393b79",
    "#637939", "#8c6d31", "#843c39", "#7b4173", "#5254a3", "#b5cf6b", "#e7ba52", "#ad494a", "#a55194", "#6b6ecf",
]  # fmt: skip
IDLE_COLOUR = "#cbd5e0"
REQUEST_MARGIN = {"l": 240, "r": 20, "t": 24, "b": 40}
STRATEGY_COLOURS = {"dedicated": "#2f6fed", "mig": "#76b900", "time-slicing": "#dd6b20"}


def _short(text: str, length: int) -> str:
    """``text`` cut to ``length`` characters with an ellipsis (axis labels on a phone; hovers keep the full name)."""
    return text if len(text) <= length else text[: length - 1] + "\u2026"


def _narrow(layout: Mapping[str, Any] | None = None, trace: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a chart changes on a narrow screen (a phone): ``dashboards.js`` merges ``layout`` into the figure's
    layout and ``trace`` into each trace when the chart is drawn under 600 px wide, so axes keep a few short ticks
    instead of crowding; kept in the figure's ``meta``, which plotly carries along without drawing it."""
    return {"layout": dict(layout or {}), "trace": dict(trace or {})}


def _layout(title: str, *, narrow: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    layout = {
        # The card's heading names the chart; the title stays in the figure's metadata for screen readers/exports.
        "meta": {"title": title, **({"narrow": narrow} if narrow else {})},
        "margin": {"l": 60, "r": 20, "t": 24, "b": 60},
        "height": 360,
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "font": {"family": "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif", "size": 12},
        "legend": {"orientation": "h", "y": -0.2},
        "hovermode": "closest",
        **extra,
    }
    return _fitted_axes(layout)


def _fitted_axes(layout: dict[str, Any]) -> dict[str, Any]:
    """Axes that widen their margin to fit their tick labels (long pool and request names)."""
    for axis in ("xaxis", "yaxis"):
        layout[axis] = {"automargin": True, **layout.get(axis, {})}
    return layout


def figure_json(fig: dict[str, Any]) -> str:
    """The figure as the JSON ``Plotly.newPlot`` takes (data + layout)."""
    return json.dumps(fig, default=str)


def series_colour(name: str) -> str:
    """One colour per team (or pool, model, ...) for every viewer and page: a stable hash of the name into PALETTE."""
    if name == IDLE_LABEL:
        return IDLE_COLOUR
    digest = hashlib.sha256(name.encode()).digest()
    return PALETTE[int.from_bytes(digest[:4], "big") % len(PALETTE)]


def cost_over_time_figure(
    table: Table,
    currency: str,
    *,
    drill_down: Callable[[str, str], str] | None = None,
    group_label: str = "team",
    budget: Decimal | None = None,
    names: Mapping[str, str] | None = None,
    idle_link: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """Cost per month stacked by group, idle capacity (when shown) stacked on top on the same axis.

    ``drill_down(month, group)`` gives each bar's link to the requests behind it (``customdata``; dashboards.js
    follows it on click), ``idle_link(month)`` the idle bar's link; ``names`` gives a group's display name (teams
    and tiers by name, their colour and link still by slug).
    """
    _, rows = table
    months = sorted({r[0] for r in rows})
    by_group: dict[str, dict[str, float]] = defaultdict(dict)
    for month, group, amount in rows:
        by_group[group][month] = float(amount)
    data: list[dict[str, Any]] = []
    for group in sorted(g for g in by_group if g != IDLE_LABEL):
        name = (names or {}).get(group, group)
        trace = {
            "type": "bar",
            "name": name,
            "x": months,
            "y": [by_group[group].get(m, 0.0) for m in months],
            "marker": {"color": series_colour(group)},
            "hovertemplate": f"{name}<br>%{{x}}: %{{y:,.2f}} {currency}<extra></extra>",
        }
        if drill_down:
            trace["customdata"] = [drill_down(m, group) for m in months]
        data.append(trace)
    layout = _layout(f"GPU cost per month, by {group_label}", barmode="stack")
    if len(months) <= 2:
        layout["bargap"] = 0.6  # one or two months: bars of a sensible width, not the whole plot
    if budget is not None and months:
        line = {"color": "#c53030", "dash": "dash", "width": 2}
        # A line across the plot (a shape, so one month shows it too), named in the legend by an empty trace.
        layout["shapes"] = [
            {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": float(budget),
             "y1": float(budget), "line": line}
        ]  # fmt: skip
        data.append(
            {
                "type": "scatter",
                "name": f"Monthly budget ({float(budget):,.0f} {currency})",
                "x": [months[0]],
                "y": [None],
                "mode": "lines",
                "line": line,
            }
        )
    if IDLE_LABEL in by_group:
        # Idle capacity is a cost like the teams' (Kubecost's __idle__ row): stacked on the same axis, so its size
        # reads true against theirs; a click opens the GPU models and pools that left it unused.
        idle = {
            "type": "bar",
            "name": "Idle capacity (__idle__)",
            "x": months,
            "y": [by_group[IDLE_LABEL].get(m, 0.0) for m in months],
            "marker": {"color": IDLE_COLOUR, "line": {"color": "#718096", "width": 1}},
            "hovertemplate": (
                f"Idle capacity<br>%{{x}}: %{{y:,.2f}} {currency}<br>click: the pools that left it<extra></extra>"
            ),
        }
        if idle_link is not None:
            idle["customdata"] = [idle_link(m) for m in months]
        data.append(idle)
    layout["yaxis"] = {"title": {"text": currency}, "tickformat": ",.0f", "gridcolor": "#edf0f3", "rangemode": "tozero"}
    layout["xaxis"] = {"type": "category"}
    return {"data": data, "layout": _fitted_axes(layout)}


def allocation_vs_utilization_figure(
    table: Table, budgets: dict[str, Any] | None = None, names: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Allocated against busy GPU-hours (measured hours x utilization) per group, utilization on top; each team's
    GPU-hour budget for the range as a marker over its bars. ``names``: a group's display name (by slug)."""
    _, rows = table
    keys = [r[0] for r in rows]
    groups = [(names or {}).get(key, key) for key in keys]
    data: list[dict[str, Any]] = [
        {"type": "bar", "name": "Allocated GPU-hours", "x": groups, "y": [r[1] for r in rows],
         "marker": {"color": "#2f6fed"}},
        {"type": "bar", "name": "Busy GPU-hours (measured)", "x": groups, "y": [r[3] or 0 for r in rows],
         "marker": {"color": "#76b900"}},
        {"type": "scatter", "name": "Avg utilization %", "x": groups, "y": [r[4] for r in rows], "yaxis": "y2",
         "mode": "markers+text", "text": [f"{r[4]:.0f}%" if r[4] is not None else "" for r in rows],
         "textposition": "top center", "marker": {"color": "#b7791f", "size": 10}},
    ]  # fmt: skip
    budgeted = [(key, group) for key, group in zip(keys, groups, strict=True) if budgets and key in budgets]
    if budgeted:
        data.append(
            {
                "type": "scatter",
                "name": "Budget (GPU-hours)",
                "x": [group for _, group in budgeted],
                "y": [float(budgets[key]) for key, _ in budgeted],
                "mode": "markers",
                "marker": {
                    "symbol": "line-ew-open",
                    "size": 36,
                    "color": "#c53030",
                    "line": {"width": 3, "color": "#c53030"},
                },
                "hovertemplate": "%{x}<br>budget %{y:,.0f} GPU-hours<extra></extra>",
            }
        )
    layout = _layout(
        "Allocation vs measured utilization",
        barmode="group",
        yaxis={"title": {"text": "GPU-hours"}, "gridcolor": "#edf0f3", "rangemode": "tozero"},
        yaxis2={
            "automargin": True,
            "title": {"text": "Utilization %"},
            "overlaying": "y",
            "side": "right",
            "range": [0, 110],
            "tickvals": [0, 25, 50, 75, 100],
            "showgrid": False,
        },
    )
    return {"data": data, "layout": layout}


def strategy_mix_figure(table: Table, currency: str) -> dict[str, Any]:
    """Cost per strategy against what the same allocations would cost as dedicated GPUs."""
    _, rows = table
    strategies = [r[0] for r in rows]
    data = [
        {"type": "bar", "name": "Charged", "x": strategies, "y": [float(r[2]) for r in rows],
         "marker": {"color": [STRATEGY_COLOURS.get(s, "#718096") for s in strategies]}},
        {"type": "bar", "name": "All-dedicated baseline", "x": strategies, "y": [float(r[3]) for r in rows],
         "marker": {"color": "#cbd5e0"},
         "text": [f"saves {float(r[4]):,.0f}" if float(r[4]) > 0 else "" for r in rows], "textposition": "outside"},
    ]  # fmt: skip
    layout = _layout(
        "Strategy mix: charged vs all-dedicated",
        barmode="group",
        yaxis={"title": {"text": currency}, "tickformat": ",.0f", "gridcolor": "#edf0f3", "rangemode": "tozero"},
    )
    return {"data": data, "layout": layout}


# plotly.py's YlGnBu spelled out: plotly.js has a scale of that name, running the other way.
HEATMAP_COLOURS = [[n / (len(sequential.YlGnBu) - 1), colour] for n, colour in enumerate(sequential.YlGnBu)]


def heatmap_figure(table: Table) -> dict[str, Any]:
    """Average utilization per pool and UTC day (colour 0-100 %)."""
    _, rows = table
    pools = sorted({r[0] for r in rows})
    hours = sorted({r[1] for r in rows})  # ISO days
    index = {h: i for i, h in enumerate(hours)}
    pool_index = {p: i for i, p in enumerate(pools)}
    z: list[list[float | None]] = [[None] * len(hours) for _ in pools]
    for pool, hour, util in rows:
        z[pool_index[pool]][index[hour]] = util
    trace = {
        "type": "heatmap",
        "z": z,
        "x": hours,
        "y": pools,
        "zmin": 0,
        "zmax": 100,
        "colorscale": HEATMAP_COLOURS,
        "colorbar": {"title": {"text": "Util %"}},
        "hovertemplate": "%{y}<br>%{x}: %{z:.0f}%<extra></extra>",
    }
    # A phone: five day ticks as MM-DD at an angle, pool names without the cluster when there is one cluster, a thin
    # colour bar.
    step = max(1, -(-len(hours) // 5))
    one_cluster = len({pool.split("/")[0] for pool in pools}) == 1
    narrow = _narrow(
        layout={
            "margin": {"l": 8, "r": 8, "t": 16, "b": 56},
            "xaxis": {
                "tickmode": "array",
                "tickvals": hours[::step],
                "ticktext": [day[5:] for day in hours[::step]],
                "tickangle": -45,
            },
            "yaxis": {
                "automargin": True,
                "tickmode": "array",
                "tickvals": pools,
                "ticktext": [_short(pool.split("/", 1)[-1] if one_cluster else pool, 14) for pool in pools],
            },
        },
        trace={"colorbar": {"thickness": 10, "title": {"text": "%"}}},
    )
    layout = _layout("Utilization per pool by day", narrow=narrow, xaxis={"type": "category", "nticks": 12})
    return {"data": [trace], "layout": layout}


def cost_per_request_figure(
    table: Table,
    currency: str,
    *,
    request_url: Callable[[int], str] | None = None,
    team_names: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The most expensive requests of the range, as horizontal bars coloured by strategy; a click opens the request.
    Bars are labelled with the team's name (``team_names``: slug -> name), the table keeps the slug."""
    columns, rows = table
    cost, request = columns.index("cost"), columns.index("request")
    ordered = list(reversed(rows))
    names = team_names or {}
    labels = [
        f"{names.get(r[0], r[0])} · {r[2]}" + (f" #{r[request]}" if isinstance(r[request], int) else "")
        for r in ordered
    ]
    trace = {
        "type": "bar",
        "x": [float(r[cost]) for r in ordered],
        "y": labels,
        "orientation": "h",
        "marker": {"color": [STRATEGY_COLOURS.get(r[3], "#718096") for r in ordered]},
        "customdata": [request_url(r[request]) if request_url and isinstance(r[request], int) else "" for r in ordered],
        "hovertemplate": f"%{{y}}<br>%{{x:,.2f}} {currency}<extra></extra>",
    }
    # A phone: the request's name cut short with its number (the team and the full name stay in the hover), a
    # margin sized to them instead of 220 px, and four cost ticks.
    narrow = _narrow(
        layout={
            "margin": {"l": 8, "r": 12, "t": 24, "b": 40},
            "yaxis": {
                "automargin": True,
                "tickmode": "array",
                "tickvals": labels,
                "ticktext": [
                    _short(str(r[2]), 14) + (f" #{r[request]}" if isinstance(r[request], int) else "") for r in ordered
                ],
            },
            "xaxis": {"nticks": 4},
        }
    )
    layout = _layout(
        "Cost per request",
        height=max(300, 26 * len(rows) + 90),
        margin={"l": 220, "r": 20, "t": 48, "b": 40},
        narrow=narrow,
        xaxis={"title": {"text": currency}, "tickformat": ",.0f", "gridcolor": "#edf0f3", "rangemode": "tozero"},
    )
    return {"data": [trace], "layout": layout}


# --- The capacity forecast: per pool, the last 7 days' daily means and the 30-day linear projection ---------

FORECAST_PALETTE = ["#2f6fed", "#1f8a4c", "#b7791f", "#c53030", "#6b46c1", "#0f766e", "#9a3412", "#374151"]


def _forecast_layout(title: str, y_title: str) -> dict[str, Any]:
    return _fitted_axes(
        {
            "title": {"text": title, "font": {"size": 15}},
            "margin": {"l": 55, "r": 20, "t": 45, "b": 40},
            "height": 360,
            "hovermode": "x unified",
            "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
            "legend": {"orientation": "h", "y": -0.18},
            "plot_bgcolor": "#fff",
            "paper_bgcolor": "#fff",
        }
    )


def _percent_traces(data: list[dict[str, Any]], name: str, forecast: Any, capacity: float, color: str) -> bool:
    if not forecast.history or capacity <= 0:
        return False
    xs = [when.isoformat() for when, _ in forecast.history]
    ys = [round(100.0 * value / capacity, 2) for _, value in forecast.history]
    data.append(
        {"type": "scatter", "x": xs, "y": ys, "mode": "lines+markers", "name": name, "line": {"color": color},
         "legendgroup": name}
    )  # fmt: skip
    if forecast.projection:
        data.append(
            {
                "type": "scatter",
                "x": [when.isoformat() for when, _ in forecast.projection],
                "y": [round(100.0 * value / capacity, 2) for _, value in forecast.projection],
                "mode": "lines",
                "name": f"{name} (trend)",
                "line": {"color": color, "dash": "dot"},
                "legendgroup": name,
                "showlegend": False,
            }
        )
    return True


def _capacity_line() -> dict[str, Any]:
    """A dashed line at 100 % across the plot, labelled at its right end."""
    return {
        "shapes": [
            {"type": "line", "xref": "x domain", "x0": 0, "x1": 1, "yref": "y", "y0": 100, "y1": 100,
             "line": {"color": "#c53030", "dash": "dash", "width": 1}}
        ],
        "annotations": [
            {"text": "capacity", "showarrow": False, "xref": "x domain", "x": 1, "xanchor": "right", "yref": "y",
             "y": 100, "yanchor": "bottom"}
        ],
    }  # fmt: skip


def allocation_forecast_figure(forecasts: Sequence[PoolForecast]) -> dict[str, Any] | None:
    """Allocation as % of each pool resource's capacity: 7 days of daily means and the 30-day trend (None: no data)."""
    data: list[dict[str, Any]] = []
    drawn = False
    for index, item in enumerate(forecasts):
        drawn |= _percent_traces(
            data, item.label, item.allocation, float(item.capacity), FORECAST_PALETTE[index % len(FORECAST_PALETTE)]
        )
    if not drawn:
        return None
    layout = _forecast_layout("Allocation forecast (% of pool capacity)", "% of capacity allocated")
    return {"data": data, "layout": {**layout, **_capacity_line()}}


def utilization_forecast_figure(forecasts: Sequence[PoolForecast]) -> dict[str, Any] | None:
    """Utilization as % of each pool's GPUs busy: 7 days of daily means and the 30-day trend (None: no data)."""
    data: list[dict[str, Any]] = []
    drawn = False
    seen: set[int] = set()
    for item in forecasts:
        if item.pool.pk in seen:
            continue
        seen.add(item.pool.pk)
        name = f"{item.pool.cluster.name}/{item.pool.name}"
        drawn |= _percent_traces(
            data, name, item.utilization, 100.0, FORECAST_PALETTE[len(seen) % len(FORECAST_PALETTE)]
        )
    if not drawn:
        return None
    return {"data": data, "layout": _forecast_layout("Utilization forecast (% of pool GPUs busy)", "% busy")}
