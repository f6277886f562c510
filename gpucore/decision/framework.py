"""The decision framework: a workload profile in, a GPU allocation recommendation out. Pure: no Django.

It follows Part 4 of the allocation guide (guide 000, docs/reference-sources.md#guides): the decision tree (4.6) and the
workload characterization matrix (4.1) give the preferred strategy; the SLA tier (4.3), ``isolation_required``,
``latency_p99_ms`` and ``gpu_count`` are floors that rule strategies out; the catalog's MIG geometry and memory decide
what fits; the price book (or the catalog's list price) and ``gpucore.pricing`` put a cost on it. Every rule that fires
adds a sentence to ``rationale`` so a reviewer can follow the decision.

This module holds ``recommend``, the flow of one decision, and the checks of its model, tier and node size; ``rules``
has the tree and the floors, ``choosing`` walks a model's plan and picks the model when none is named,
``alternatives`` lists the other options, ``options`` defines an option and a decision's context, ``sizing`` fits
and prices each option, ``explain`` writes the sentences (``prose`` words the numbers), ``results`` defines the
answers and their JSON, ``inputs`` checks the arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import replace
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from gpucore.catalog import Catalog, CatalogError, GpuModelSpec
from gpucore.decision.alternatives import list_alternatives
from gpucore.decision.choosing import choose_model, fitting_options, walk
from gpucore.decision.explain import (
    cost_line,
    nobody_serves_line,
    sizing_line,
    too_big_for_any_line,
    too_big_for_line,
    utilization_line,
)
from gpucore.decision.inputs import (
    NodePools,
    OfferSet,
    normalize_layouts,
    normalize_node_sizes,
    normalize_pools,
    normalize_rates,
)
from gpucore.decision.options import CATALOG_CURRENCY, DecisionContext, core_values
from gpucore.decision.prose import need_text
from gpucore.decision.results import (
    EXPECTED_OVERHEAD_PCT,
    ISOLATION,
    UTILIZATION_TARGET_PCT,
    Alternative,
    Isolation,
    Recommendation,
)
from gpucore.decision.rules import (
    LATENCY_MEMORY_THRESHOLD_GB,
    apply_floors,
    check_replicas,
    classify_intent,
    tier1_latency_ms,
)
from gpucore.profile import ProfileError, WorkloadProfile
from gpucore.sla import DEFAULT_TIERS_BY_SLUG, SlaTierSpec
from gpucore.vocabulary import WorkloadType

__all__ = [
    "CATALOG_CURRENCY",
    "EXPECTED_OVERHEAD_PCT",
    "ISOLATION",
    "LATENCY_MEMORY_THRESHOLD_GB",
    "UTILIZATION_TARGET_PCT",
    "Alternative",
    "Isolation",
    "NodePools",
    "Recommendation",
    "recommend",
]


def recommend(
    profile: WorkloadProfile,
    catalog: Catalog,
    *,
    tiers: Mapping[str, SlaTierSpec] = DEFAULT_TIERS_BY_SLUG,
    rates: Mapping[str, Decimal] | None = None,
    time_slice_replicas: Mapping[str, int] | None = None,
    default_time_slice_replicas: int = 4,
    currency: str = "USD",
    offered: Callable[[str, str, str | None], bool] | Set[tuple[str, str, str | None]] | None = None,
    gpus_per_node: Mapping[str, int] | None = None,
    mig_layouts: Mapping[tuple[str, str], Mapping[str, int]] | None = None,
    pools: NodePools | None = None,
) -> Recommendation:
    """Recommend a GPU allocation for ``profile`` from ``catalog``; raises ``ProfileError`` for what cannot be served.

    ``rates`` maps model names to the hourly price of one whole GPU (the price book); a model without one falls back
    to the catalog's reference price (USD only), else its cost is unknown and it ranks after priced models.
    ``time_slice_replicas`` maps model names to their time-sliced pools' replicas (one number, or one per pool);
    otherwise the SLA tier's default applies, else ``default_time_slice_replicas``, lowered until a share holds the
    replica. ``gpus_per_node`` maps model names to the most GPUs one node of a dedicated pool has: a replica needing
    more is refused on ``gpu_count`` (its GPUs must share a node). ``mig_layouts`` maps (model, MIG profile) to the
    per-GPU layout of the pool serving it, so a slice's GPU share is the one chargeback bills on that pool.
    ``offered`` says which (model, strategy, MIG profile) options some node pool serves: a callback, or the set of
    them. ``pools`` gives the last four at once, normalised already (``NodePools``), in place of them. The cost is
    monthly, and for ``duration_hours``.
    """
    model, tier = _resolve(profile, catalog, tiers)
    if default_time_slice_replicas < 2:
        raise ValueError("default_time_slice_replicas must be at least 2 (the device plugin's minimum).")
    check_replicas(profile, tier)
    if pools is not None:
        if offered is not None or time_slice_replicas or gpus_per_node or mig_layouts:
            raise ValueError("Give the node pools either as pools= or as their four mappings, not both.")
        offered = pools.offered
        node_sizes = pools.gpus_per_node
    else:
        if offered is not None and not callable(offered):
            offered = OfferSet(offered if offered.__class__ is frozenset else frozenset(offered))  # type: ignore[arg-type]
        node_sizes = normalize_node_sizes(gpus_per_node) if gpus_per_node else _NONE
    _check_node_size(profile, model, node_sizes)
    rationale: list[str] = []
    intent, intent_reason = classify_intent(profile, rationale)
    forbidden, order = apply_floors(profile, tier, intent, rationale, tier1_p99_ms=tier1_latency_ms(tiers.values()))
    ctx = DecisionContext(
        profile=profile,
        catalog=catalog,
        tier=tier,
        multiplier=tier.price_multiplier if tier else Decimal(1),
        currency=currency,
        rates=normalize_rates(rates) if rates else _NONE,
        pools=(
            pools.time_slice_replicas
            if pools is not None
            else normalize_pools(time_slice_replicas)
            if time_slice_replicas
            else _NONE
        ),
        default_time_slice_replicas=default_time_slice_replicas,
        forbidden=forbidden,
        offered=offered,
        gpus_per_node=node_sizes,
        mig_layouts=(
            pools.mig_layouts if pools is not None else normalize_layouts(mig_layouts) if mig_layouts else _NONE
        ),
    )
    outcomes = fitting_options(ctx, intent, order)
    if model is not None:
        rationale.append(f"GPU model {model.name} ({model.family}, {model.memory_gb} GB), as requested.")
        chosen = walk(ctx, model, intent, order, rationale)
        if chosen is None:
            if offered is not None and walk(replace(ctx, offered=None), model, intent, order) is not None:
                raise ProfileError({"cluster": [_no_pool_serves(ctx, model)]})
            raise ProfileError({"gpu_memory_gb": [too_big_for_line(ctx, model)]})
    else:
        choice = choose_model(ctx, order, outcomes)
        chosen = choice.chosen
        if chosen is None:
            unfiltered = replace(ctx, offered=None)
            if ctx.offered is not None and fitting_options(unfiltered, intent, order):
                raise ProfileError({"cluster": [_no_pool_serves(ctx, None)]})
            raise ProfileError({"gpu_memory_gb": [too_big_for_any_line(ctx)]})
        for strategy in choice.skipped:
            rationale.append(nobody_serves_line(ctx, intent, strategy))
        rationale.append(choice.line)

    rationale.append(sizing_line(ctx, chosen))
    rationale.append(cost_line(ctx, chosen))
    utilization = utilization_line(profile, chosen.strategy)
    if utilization:
        rationale.append(utilization)
    alternatives = list_alternatives(ctx, intent, intent_reason, chosen, named=model is not None)
    return Recommendation(
        *core_values(ctx, chosen),
        tuple(rationale),
        alternatives,
        profile.workload_type is WorkloadType.HPC_SIMULATION,
    )


_NONE: Mapping[Any, Any] = MappingProxyType({})  # an input not given: read-only, so one serves every decision


# --- arguments -------------------------------------------------------------------------------------------------


def _resolve(
    profile: WorkloadProfile, catalog: Catalog, tiers: Mapping[str, SlaTierSpec]
) -> tuple[GpuModelSpec | None, SlaTierSpec | None]:
    """The named model and tier, or a ``ProfileError`` listing what is known (both fields at once)."""
    errors: dict[str, list[str]] = {}
    model = tier = None
    if profile.gpu_model is not None:
        try:
            model = catalog.get(profile.gpu_model)
        except CatalogError as error:
            errors["gpu_model"] = [str(error)]
    if profile.sla_tier is not None:
        tier = tiers.get(profile.sla_tier)
        if tier is None:
            known = ", ".join(tiers) or "none"
            errors["sla_tier"] = [f"Unknown SLA tier '{profile.sla_tier}'. Known tiers: {known}."]
    if errors:
        raise ProfileError(errors)
    if not len(catalog):
        raise CatalogError("The GPU catalog is empty: no model to recommend.")
    return model, tier


def _check_node_size(profile: WorkloadProfile, model: GpuModelSpec | None, node_sizes: Mapping[str, int]) -> None:
    """A replica's GPUs share a node: more GPUs than the largest node that could serve it is a ``gpu_count`` error."""
    if profile.gpu_count == 1 or not node_sizes:
        return
    if model is not None:
        keys = [k.casefold() for k in (model.name, *model.aliases) if k.casefold() in node_sizes]
        sizes = [node_sizes[k] for k in keys]
        where = f"a {model.name} node here"
    else:
        sizes = list(node_sizes.values())
        where = "any node here that serves dedicated GPUs"
    if not sizes:
        return  # no dedicated pool of that model: the "no node pool offers" refusal says it better
    largest = max(sizes)
    if profile.gpu_count > largest:
        raise ProfileError(
            {
                "gpu_count": [
                    f"{profile.gpu_count} GPUs per replica, but {where} has at most {largest} GPUs, and a replica's "
                    f"GPUs must share a node. Ask for at most {largest} GPUs per replica, and run multi-node work as "
                    f"several replicas (for example {-(-profile.gpu_count // largest)} replicas of {largest} GPUs)."
                ]
            }
        )


def _no_pool_serves(ctx: DecisionContext, model: GpuModelSpec | None) -> str:
    on = f" on {model.name}" if model is not None else ""
    return (
        f"No node pool here offers an allocation{on} that fits this profile ({need_text(ctx.profile)}) and its policy. "
        "Ask a platform admin for a pool with a fitting GPU model and sharing mode, or pick another cluster."
    )
