"""Time-series figures of measured use (a request's or a team's utilization, memory and power by hour).

Drawn as plain JSON-ready dicts for ``json_script``; the page's ``static/js/utilization_charts.js`` loads our own
plotly.js (``static/js/plotly-cartesian.min.js``) only where such a chart is on the page.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

SERIES = [
    # key, label, unit, colour
    ("utilization_pct", "GPU utilization", "%", "#2f6fed"),
    ("memory_gb", "GPU memory used", "GB", "#76b900"),
    ("power_w", "Power", "W", "#dd6b20"),
]


def utilization_timeseries_figure(points: list[dict[str, Any]], *, title: str) -> dict[str, Any] | None:
    """Three stacked panels sharing the time axis: utilization (0-100 %), memory (GB, with the peak) and power (W).

    None when there are no points (the page says so instead of drawing empty axes). The figure's layout and trace
    styles never change, so plotly builds them once per process (``_skeleton``); each call fills in the hours and
    the values, in new top-level dicts that share the skeleton's nested ones (read them, never change them).
    The answer is the JSON plotly's validated objects give (``tests/billing/test_utilization_series.py`` compares
    the two).
    """
    if not points:
        return None
    hours = [p["hour"].isoformat() for p in points]
    skeleton = _skeleton()
    keys = [key for key, *_ in SERIES] + ["peak_memory_gb"]
    # New top-level dicts over the shared skeleton's values (keys keep their places): the skeleton is never changed,
    # so its large layout and template need no deep copy per view.
    data = [
        {**trace, "x": hours, "y": [_number(p[key]) for p in points]}
        for trace, key in zip(skeleton["data"], keys, strict=True)
    ]
    return {**skeleton, "data": data, "layout": {**skeleton["layout"], "meta": {"title": title}}}


def utilization_timeseries_figure_by_plotly(points: list[dict[str, Any]], *, title: str) -> dict[str, Any]:
    """The figure built through plotly's objects (validated), hours and values included: what ``_skeleton`` is made
    from, and what the tests compare the fast path with."""
    hours = [p["hour"].isoformat() for p in points]
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06)
    for row, (key, label, unit, colour) in enumerate(SERIES, start=1):
        fig.add_trace(
            go.Scatter(
                x=hours,
                y=[p[key] for p in points],
                name=label,
                mode="lines",
                line={"color": colour, "width": 1.5},
                connectgaps=False,  # an hour with no reading is a gap, never a line through zero
                hovertemplate=f"%{{x|%Y-%m-%d %H:00}} UTC<br>{label}: %{{y:,.1f}} {unit}<extra></extra>",
            ),
            row=row,
            col=1,
        )
        fig.update_yaxes(title_text=unit, row=row, col=1, gridcolor="#edf0f3", rangemode="tozero")
    fig.add_trace(
        go.Scatter(
            x=hours,
            y=[p["peak_memory_gb"] for p in points],
            name="Peak memory (one GPU)",
            mode="lines",
            line={"color": "#76b900", "width": 1, "dash": "dot"},
            hovertemplate="%{x|%Y-%m-%d %H:00} UTC<br>Peak: %{y:,.1f} GB<extra></extra>",
        ),
        row=2,
        col=1,
    )
    fig.update_yaxes(range=[0, 100], row=1, col=1)
    fig.update_layout(
        meta={"title": title},
        height=520,
        margin={"l": 56, "r": 12, "t": 16, "b": 40},
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        font={"family": "system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif", "size": 12},
        legend={"orientation": "h", "y": -0.08},
        hovermode="x unified",
    )
    return json.loads(fig.to_json())


@functools.cache
def _skeleton() -> dict[str, Any]:
    """The figure with no hours: layout, template and trace styles (callers copy it before filling it in)."""
    return utilization_timeseries_figure_by_plotly([], title="")


def _number(value: Any) -> float | int | None:
    """A value as plotly's JSON writes it: Decimals as floats, gaps as None."""
    if value is None or isinstance(value, int | float):
        return value
    return float(value)
