"""The pool's MIG page as a view-model: the latest plan's current and proposed layouts per node, and the picture."""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go
from django.conf import settings

from allocations.clusters.dynamic_mig import dynamic_mig_overview, runs_dynamic_mig
from allocations.models import MigPlan, MigPlanStatus, NodePool
from gpucore.catalog import GpuModelSpec
from gpucore.manifests import ManifestError
from gpucore.mig_planner import layout_of

# One colour per profile size, the same on every page (1g .. 7g, media extensions a shade darker).
PROFILE_COLOURS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d", "#bab0ac"]


def _placement(model: GpuModelSpec, counts: dict[str, int]) -> list[tuple[str, int, int]]:
    """``(profile, start, memory slices)`` of a layout, or nothing for an empty or unplaceable one."""
    if not counts:
        return []
    try:
        layout = layout_of(model, counts)
    except ManifestError:
        return []
    return [(name, start, model.profile(name).memory_slices) for name, start in layout.placement]


def layouts_figure(model: GpuModelSpec, plan: MigPlan, *, limit: int = 24) -> dict[str, Any]:
    """Stacked bars of memory slices per GPU, now and planned: each instance at its start slice, coloured by profile.

    Only the GPUs whose layout changes are drawn (the diff), at most ``limit`` (the page's tables list them all).
    """
    changed = [gpu for gpu in plan.gpus if gpu["changed"]]
    gpus = sorted(changed, key=lambda g: (g.get("node") or "~", g.get("index") or 0))[:limit]
    colours = {p.name: PROFILE_COLOURS[i % len(PROFILE_COLOURS)] for i, p in enumerate(model.mig_profiles)}
    rows: list[str] = []
    bars: dict[str, dict[str, list[Any]]] = {}
    for gpu in gpus:
        label = f"{gpu['node']}/{gpu['index']}" if gpu.get("node") else "new GPU"
        for when, counts in (("now", gpu["current"]), ("plan", gpu["proposed"])):
            if gpu.get("added") and when == "now":
                continue
            row = f"{label} · {when}"
            rows.append(row)
            for name, start, size in _placement(model, counts):
                bar = bars.setdefault(name, {"x": [], "y": [], "base": [], "text": []})
                bar["x"].append(size)
                bar["y"].append(row)
                bar["base"].append(start)
                bar["text"].append(f"{name}@{start}")
    fig = go.Figure()
    for profile in model.mig_profiles:
        if profile.name not in bars:
            continue
        bar = bars[profile.name]
        fig.add_trace(
            go.Bar(
                name=profile.name,
                orientation="h",
                x=bar["x"],
                y=bar["y"],
                base=bar["base"],
                text=bar["text"],
                textposition="inside",
                insidetextanchor="middle",
                marker={"color": colours[profile.name], "line": {"color": "#ffffff", "width": 2}},
                hovertemplate="%{text}<extra>%{y}</extra>",
            )
        )
    fig.update_layout(
        barmode="overlay",
        height=max(240, 28 * len(rows) + 90),
        margin={"l": 10, "r": 10, "t": 30, "b": 40},
        xaxis={"title": "memory slice", "range": [0, model.mig_memory_slices], "dtick": 1},
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(rows)), "automargin": True},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        plot_bgcolor="#f6f7f9",
    )
    plotly_json = fig.to_plotly_json()
    return {"data": plotly_json["data"], "layout": plotly_json["layout"]}


def mig_pool_page(*, pool: NodePool, user_is_admin: bool) -> dict[str, Any]:
    """What the pool's MIG page shows: the latest plan (its nodes, figure, events) and the earlier ones."""
    plans = list(MigPlan.objects.filter(pool=pool).select_related("created_by", "approved_by")[:10])
    latest = plans[0] if plans else None
    model = pool.gpu_model.to_spec()
    context: dict[str, Any] = {
        "pool": pool,
        "cluster": pool.cluster,
        "plans": plans,
        "plan": latest,
        "currency": settings.PORTAL_CURRENCY,
        "is_admin": user_is_admin,
        "needs_nodes": pool.cluster.backend == "gitops" and not pool.mig_node_layouts.exists(),
        "layouts": list(pool.mig_node_layouts.all()),
        # A dynamic MIG pool has no layout to plan: the policy's placements beside what the driver reports.
        "dynamic": dynamic_mig_overview(pool) if runs_dynamic_mig(pool) else None,
    }
    if latest is None:
        return context
    nodes: dict[str, dict[str, Any]] = {}
    for gpu in latest.gpus:
        key = gpu.get("node") or "(GPUs to add)"
        row = nodes.setdefault(key, {"node": key, "gpus": [], "drain": key in latest.nodes_to_drain})
        row["gpus"].append(gpu)
    steps = (latest.progress or {}).get("nodes", {})
    for key, row in nodes.items():
        row["step"] = (steps.get(key) or {}).get("step", "")
    context.update(
        {
            "nodes": list(nodes.values()),
            "figure": json.dumps(layouts_figure(model, latest), default=str),
            "events": list(latest.events.all()),
            "can_approve": user_is_admin and latest.status == MigPlanStatus.PROPOSED,
            "can_apply": user_is_admin and latest.status in (MigPlanStatus.APPROVED, MigPlanStatus.FAILED),
            "can_cancel": user_is_admin
            and latest.status in (MigPlanStatus.PROPOSED, MigPlanStatus.APPROVED, MigPlanStatus.FAILED),
        }
    )
    return context
