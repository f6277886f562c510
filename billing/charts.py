"""Every plotly figure of the billing pages: cost dashboards and capacity forecast. Views call it, never selectors.

The pages draw them with the plotly.js served from our static files (``static/js/plotly-cartesian.min.js``, no
CDN). Each cost figure is drawn from the same ``(columns, rows)`` table shown under it and served as CSV, so a chart
never says what its table does not; the forecast figures draw ``PoolForecast`` histories and projections
(``billing.utilization.selectors.pool_forecasts``) as plain JSON-ready dicts for ``json_script``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from billing.costs.dashboards import IDLE_LABEL, Table

if TYPE_CHECKING:
    from billing.utilization.selectors import PoolForecast

PALETTE = ["#2f6fed", "#76b900", "#b7791f", "#9f7aea", "#e53e3e", "#319795", "#d53f8c", "#718096", "#dd6b20", "#3182ce"]
IDLE_COLOUR = "#cbd5e0"
REQUEST_MARGIN = {"l": 240, "r": 20, "t": 24, "b": 40}
STRATEGY_COLOURS = {"dedicated": "#2f6fed", "mig": "#76b900", "time-slicing": "#dd6b20"}


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return {
        # The card's heading names the chart; the title stays in the figure's metadata for screen readers/exports.
        "meta": {"title": title},
        "margin": {"l": 60, "r": 20, "t": 24, "b": 60},
        "height": 360,
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "font": {"family": "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif", "size": 12},
        "legend": {"orientation": "h", "y": -0.2},
        "hovermode": "closest",
        **extra,
    }


def figure_json(fig: go.Figure) -> str:
    """The figure as the JSON ``Plotly.newPlot`` takes (data + layout)."""
    return json.dumps({"data": fig.to_plotly_json()["data"], "layout": fig.to_plotly_json()["layout"]}, default=str)


def cost_over_time_figure(table: Table, currency: str) -> go.Figure:
    """Organisation cost per month, stacked by team (idle capacity last, in grey)."""
    _, rows = table
    months = sorted({r[0] for r in rows})
    by_team: dict[str, dict[str, float]] = defaultdict(dict)
    for month, team, amount in rows:
        by_team[team][month] = float(amount)
    fig = go.Figure()
    teams = sorted(t for t in by_team if t != IDLE_LABEL)
    for index, team in enumerate([*teams, IDLE_LABEL] if IDLE_LABEL in by_team else teams):
        colour = IDLE_COLOUR if team == IDLE_LABEL else PALETTE[index % len(PALETTE)]
        fig.add_bar(
            name=team,
            x=months,
            y=[by_team[team].get(m, 0.0) for m in months],
            marker_color=colour,
            hovertemplate=f"{team}<br>%{{x}}: %{{y:,.2f}} {currency}<extra></extra>",
        )
    fig.update_layout(
        **_layout("GPU cost per month, by team", barmode="stack"),
        yaxis={"title": {"text": currency}, "tickformat": ",.0f", "gridcolor": "#edf0f3"},
        xaxis={"type": "category"},
    )
    return fig


def allocation_vs_utilization_figure(table: Table) -> go.Figure:
    """Allocated GPU-hours against busy GPU-hours (measured hours x utilization) per team, utilization on top."""
    _, rows = table
    teams = [r[0] for r in rows]
    fig = go.Figure()
    fig.add_bar(name="Allocated GPU-hours", x=teams, y=[r[1] for r in rows], marker_color="#2f6fed")
    fig.add_bar(name="Busy GPU-hours (measured)", x=teams, y=[r[3] or 0 for r in rows], marker_color="#76b900")
    fig.add_scatter(
        name="Avg utilization %",
        x=teams,
        y=[r[4] for r in rows],
        yaxis="y2",
        mode="markers+text",
        text=[f"{r[4]:.0f}%" if r[4] is not None else "" for r in rows],
        textposition="top center",
        marker={"color": "#b7791f", "size": 10},
    )
    fig.update_layout(
        **_layout("Allocation vs measured utilization", barmode="group"),
        yaxis={"title": {"text": "GPU-hours"}, "gridcolor": "#edf0f3"},
        yaxis2={
            "title": {"text": "Utilization %"},
            "overlaying": "y",
            "side": "right",
            "range": [0, 110],
            "tickvals": [0, 25, 50, 75, 100],
            "showgrid": False,
        },
    )
    return fig


def strategy_mix_figure(table: Table, currency: str) -> go.Figure:
    """Cost per strategy against what the same allocations would cost as dedicated GPUs."""
    _, rows = table
    strategies = [r[0] for r in rows]
    fig = go.Figure()
    fig.add_bar(
        name="Charged",
        x=strategies,
        y=[float(r[2]) for r in rows],
        marker_color=[STRATEGY_COLOURS.get(s, "#718096") for s in strategies],
    )
    fig.add_bar(
        name="All-dedicated baseline",
        x=strategies,
        y=[float(r[3]) for r in rows],
        marker_color="#cbd5e0",
        text=[f"saves {float(r[4]):,.0f}" if float(r[4]) > 0 else "" for r in rows],
        textposition="outside",
    )
    fig.update_layout(
        **_layout("Strategy mix: charged vs all-dedicated", barmode="group"),
        yaxis={"title": {"text": currency}, "tickformat": ",.0f", "gridcolor": "#edf0f3"},
    )
    return fig


def heatmap_figure(table: Table) -> go.Figure:
    """Average utilization per pool and hour (colour 0-100 %)."""
    _, rows = table
    pools = sorted({r[0] for r in rows})
    hours = sorted({r[1] for r in rows})
    index = {h: i for i, h in enumerate(hours)}
    pool_index = {p: i for i, p in enumerate(pools)}
    z: list[list[float | None]] = [[None] * len(hours) for _ in pools]
    for pool, hour, util in rows:
        z[pool_index[pool]][index[hour]] = util
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[h[:13].replace("T", " ") + "h" for h in hours],
            y=pools,
            zmin=0,
            zmax=100,
            colorscale="YlGnBu",
            colorbar={"title": {"text": "Util %"}},
            hovertemplate="%{y}<br>%{x}: %{z:.0f}%<extra></extra>",
        )
    )
    fig.update_layout(**_layout("Utilization per pool by hour"), xaxis={"nticks": 12})
    return fig


def cost_per_request_figure(table: Table, currency: str) -> go.Figure:
    """The most expensive requests of the month, as horizontal bars coloured by strategy."""
    _, rows = table
    ordered = list(reversed(rows))
    labels = [f"{r[0]} · {r[2]}" for r in ordered]
    fig = go.Figure(
        go.Bar(
            x=[float(r[6]) for r in ordered],
            y=labels,
            orientation="h",
            marker_color=[STRATEGY_COLOURS.get(r[3], "#718096") for r in ordered],
            hovertemplate=f"%{{y}}<br>%{{x:,.2f}} {currency}<extra></extra>",
        )
    )
    fig.update_layout(
        **_layout(
            "Cost per request", height=max(300, 26 * len(rows) + 90), margin={"l": 220, "r": 20, "t": 48, "b": 40}
        ),
        xaxis={"title": {"text": currency}, "tickformat": ",.0f", "gridcolor": "#edf0f3"},
    )
    return fig


# --- The capacity forecast: per pool, the last 7 days' daily means and the 30-day linear projection ---------

FORECAST_PALETTE = ["#2f6fed", "#1f8a4c", "#b7791f", "#c53030", "#6b46c1", "#0f766e", "#9a3412", "#374151"]


def _forecast_layout(title: str, y_title: str) -> dict[str, Any]:
    return {
        "title": {"text": title, "font": {"size": 15}},
        "margin": {"l": 55, "r": 20, "t": 45, "b": 40},
        "height": 360,
        "hovermode": "x unified",
        "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
        "legend": {"orientation": "h", "y": -0.18},
        "plot_bgcolor": "#fff",
        "paper_bgcolor": "#fff",
    }


def _percent_traces(fig: go.Figure, name: str, forecast: Any, capacity: float, color: str) -> bool:
    if not forecast.history or capacity <= 0:
        return False
    xs = [when.isoformat() for when, _ in forecast.history]
    ys = [round(100.0 * value / capacity, 2) for _, value in forecast.history]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=name, line={"color": color}, legendgroup=name))
    if forecast.projection:
        fig.add_trace(
            go.Scatter(
                x=[when.isoformat() for when, _ in forecast.projection],
                y=[round(100.0 * value / capacity, 2) for _, value in forecast.projection],
                mode="lines",
                name=f"{name} (trend)",
                line={"color": color, "dash": "dot"},
                legendgroup=name,
                showlegend=False,
            )
        )
    return True


def _with_capacity_line(fig: go.Figure) -> None:
    fig.add_hline(y=100, line={"color": "#c53030", "dash": "dash", "width": 1}, annotation_text="capacity")


def allocation_forecast_figure(forecasts: Sequence[PoolForecast]) -> dict[str, Any] | None:
    """Allocation as % of each pool resource's capacity: 7 days of daily means and the 30-day trend (None: no data)."""
    fig = go.Figure()
    drawn = False
    for index, item in enumerate(forecasts):
        drawn |= _percent_traces(
            fig, item.label, item.allocation, float(item.capacity), FORECAST_PALETTE[index % len(FORECAST_PALETTE)]
        )
    if not drawn:
        return None
    _with_capacity_line(fig)
    fig.update_layout(**_forecast_layout("Allocation forecast (% of pool capacity)", "% of capacity allocated"))
    return json.loads(fig.to_json())


def utilization_forecast_figure(forecasts: Sequence[PoolForecast]) -> dict[str, Any] | None:
    """Utilization as % of each pool's GPUs busy: 7 days of daily means and the 30-day trend (None: no data)."""
    fig = go.Figure()
    drawn = False
    seen: set[int] = set()
    for item in forecasts:
        if item.pool.pk in seen:
            continue
        seen.add(item.pool.pk)
        name = f"{item.pool.cluster.name}/{item.pool.name}"
        drawn |= _percent_traces(
            fig, name, item.utilization, 100.0, FORECAST_PALETTE[len(seen) % len(FORECAST_PALETTE)]
        )
    if not drawn:
        return None
    fig.update_layout(**_forecast_layout("Utilization forecast (% of pool GPUs busy)", "% busy"))
    return json.loads(fig.to_json())
