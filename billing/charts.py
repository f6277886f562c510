"""Plotly figures of the cost dashboards, built from the dashboard tables and handed to the page as JSON.

The page draws them with the plotly.js served from our static files (no CDN). Every figure is drawn from the same
``(columns, rows)`` table shown under it and served as CSV, so a chart never says what its table does not.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import plotly.graph_objects as go

from billing.dashboards import IDLE_LABEL, Table

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
