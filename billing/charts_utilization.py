"""Plotly figures of the capacity forecast: per pool, the last 7 days' daily means and the 30-day linear projection.

Figures are returned as plain JSON-ready dicts for ``json_script``; the page draws them with the local plotly.js
(``static/js/plotly-cartesian.min.js``, no CDN).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

if TYPE_CHECKING:
    from billing.utilization_selectors import PoolForecast

PALETTE = ["#2f6fed", "#1f8a4c", "#b7791f", "#c53030", "#6b46c1", "#0f766e", "#9a3412", "#374151"]


def _layout(title: str, y_title: str) -> dict[str, Any]:
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
        drawn |= _percent_traces(fig, item.label, item.allocation, float(item.capacity), PALETTE[index % len(PALETTE)])
    if not drawn:
        return None
    _with_capacity_line(fig)
    fig.update_layout(**_layout("Allocation forecast (% of pool capacity)", "% of capacity allocated"))
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
        drawn |= _percent_traces(fig, name, item.utilization, 100.0, PALETTE[len(seen) % len(PALETTE)])
    if not drawn:
        return None
    fig.update_layout(**_layout("Utilization forecast (% of pool GPUs busy)", "% busy"))
    return json.loads(fig.to_json())
