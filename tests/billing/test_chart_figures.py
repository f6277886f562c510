"""The billing pages' figures are written as plain plotly JSON; each must be what plotly's own validated figure
objects give for it: every property known to plotly, every value of a type it takes, nothing dropped."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal as D
from types import SimpleNamespace
from typing import Any

import plotly.graph_objects as go
import pytest
from plotly.colors import sequential

from billing import charts
from billing.costs.dashboards import IDLE_LABEL

COST_OVER_TIME = (["month", "team", "cost"], [["2026-09", "vision", D("120.50")], ["2026-10", "vision", D("80")],
                  ["2026-10", "nlp", D("12.25")], ["2026-10", IDLE_LABEL, D("40")]])  # fmt: skip
UTILIZATION = (["team", "allocated_gpu_hours", "measured_gpu_hours", "busy_gpu_hours", "avg_utilization_pct"],
               [["vision", 120.0, 100.0, 40.0, 40.0], ["nlp", 30.0, 0.0, None, None]])  # fmt: skip
STRATEGY = (["strategy", "allocated_gpu_hours", "cost", "dedicated_baseline", "saving"],
            [["dedicated", 100.0, D("200"), D("200"), D("0")], ["mig", 50.0, D("30"), D("100"), D("70")]])  # fmt: skip
HEATMAP = (
    ["pool", "day", "avg_utilization_pct"],
    [["demo/h100", "2026-10-01", 40.0], ["demo/a100", "2026-10-02", 75.5]],
)
REQUESTS = (
    ["team", "request", "name", "strategy", "gpu_model", "pool", "tier", "allocated_gpu_hours", "cost"],
    [
        ["vision", 7, "a very long training run name", "dedicated", "H100-80GB", "demo/h100", "tier1", 10.0, D("20")],
        ["nlp", "import", "legacy-job", "mig", "A100-80GB", "(imported)", "(no tier)", 5.0, D("3")],
    ],
)


def _forecast(start: datetime, values: list[float]) -> SimpleNamespace:
    history = tuple((start + timedelta(days=n), v) for n, v in enumerate(values))
    projection = tuple((start + timedelta(days=len(values) + n), values[-1] + n) for n in range(3))
    return SimpleNamespace(history=history, projection=projection)


def _pool_forecasts() -> list[SimpleNamespace]:
    start = datetime(2026, 10, 1, tzinfo=UTC)
    pool = SimpleNamespace(pk=1, name="h100", cluster=SimpleNamespace(name="demo"))
    return [SimpleNamespace(label="demo/h100 gpu", pool=pool, capacity=16, allocation=_forecast(start, [4, 6, 8]),
                            utilization=_forecast(start, [30.0, 45.5, 50.0]))]  # fmt: skip


FIGURES = {
    "cost over time": lambda: charts.cost_over_time_figure(
        COST_OVER_TIME,
        "USD",
        drill_down=lambda m, g: f"/r?m={m}&g={g}",
        budget=D("150"),
        names={"nlp": "NLP"},
        idle_link=lambda m: f"/idle?month={m}",
    ),
    "allocation vs utilization": lambda: charts.allocation_vs_utilization_figure(
        UTILIZATION, {"vision": D("100")}, {"vision": "Vision"}
    ),
    "strategy mix": lambda: charts.strategy_mix_figure(STRATEGY, "USD"),
    "pool heatmap": lambda: charts.heatmap_figure(HEATMAP),
    "cost per request": lambda: charts.cost_per_request_figure(
        REQUESTS, "USD", request_url=lambda pk: f"/requests/{pk}/", team_names={"vision": "Vision"}
    ),
    "allocation forecast": lambda: charts.allocation_forecast_figure(_pool_forecasts()),
    "utilization forecast": lambda: charts.utilization_forecast_figure(_pool_forecasts()),
}


def _by_plotly(figure: dict[str, Any]) -> dict[str, Any]:
    """The figure through plotly's validated objects (which raise on an unknown property or a bad value), as JSON,
    without the default template plotly adds."""
    validated = json.loads(go.Figure(figure).to_json())
    validated["layout"].pop("template", None)
    return validated


@pytest.mark.parametrize("name", FIGURES)
def test_each_figure_is_what_plotly_validates_it_to(name: str) -> None:
    figure = FIGURES[name]()
    assert figure["data"] and figure["layout"]["height"] > 0
    assert json.loads(charts.figure_json(figure)) == _by_plotly(figure)


def test_a_misspelt_property_is_caught_by_the_check() -> None:
    figure = charts.strategy_mix_figure(STRATEGY, "USD")
    figure["data"][0]["colour"] = "#fff"
    with pytest.raises(ValueError, match="colour"):
        _by_plotly(figure)


def test_the_heatmap_runs_from_light_to_dark_as_plotly_draws_ylgnbu() -> None:
    scale = charts.heatmap_figure(HEATMAP)["data"][0]["colorscale"]
    assert scale[0] == [0.0, sequential.YlGnBu[0]] and scale[-1] == [1.0, sequential.YlGnBu[-1]]
    assert charts.allocation_forecast_figure([]) is None and charts.utilization_forecast_figure([]) is None
