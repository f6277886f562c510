"""What-if: one workload profile priced for every strategy on every GPU model a pool offers. Pure: no Django.

Where ``recommend`` picks one allocation, ``compare`` lays out all of them side by side: for each (GPU model,
strategy) a node pool offers, the allocation the profile would get there (the same sizing as the recommendation),
its GPU share, its monthly cost and its cost for the requested duration, and whether policy (isolation, latency,
SLA tier, GPUs per replica) permits it. Quota and budget are the caller's to judge: they live in the database.

Per-run estimates (training and HPC): given the hours a run takes on a reference model (with the same GPUs per
replica and replicas), a dedicated option's run
takes ``hours x reference throughput / model throughput``, the ratio of the models' dense FP16/BF16 tensor throughput
from NVIDIA's datasheets (``GpuModelSpec.dense_fp16_tflops``, its source in ``throughput_source``). It is an
estimate: real speed-ups depend on memory bandwidth, interconnect and how compute-bound the job is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from gpucore.catalog import Catalog, CatalogError, GpuModelSpec
from gpucore.decision.inputs import normalize_layouts, normalize_node_sizes, normalize_pools, normalize_rates
from gpucore.decision.options import DecisionContext, Option
from gpucore.decision.permission import why_not_permitted
from gpucore.decision.rules import apply_floors, check_replicas, classify_intent, tier1_latency_ms
from gpucore.decision.sizing import size_option
from gpucore.profile import ProfileError, WorkloadProfile
from gpucore.sla import DEFAULT_TIERS_BY_SLUG, SlaTierSpec
from gpucore.vocabulary import Strategy, WorkloadType

PER_RUN_WORKLOADS = frozenset({WorkloadType.TRAINING, WorkloadType.HPC_SIMULATION})


@dataclass(frozen=True, slots=True)
class RunEstimate:
    """Hours and cost of one run on a model, scaled from the hours it takes on a reference model (an estimate)."""

    reference_model: str
    reference_hours: Decimal
    speedup: Decimal  # model throughput / reference throughput
    hours: Decimal
    cost: Decimal | None


@dataclass(frozen=True, slots=True)
class WhatIfOption:
    """The profile on one (model, strategy) a pool offers: sized and priced, or why it does not fit."""

    gpu_model: str
    strategy: Strategy
    fits: bool
    permitted: bool
    reason: str | None  # why it does not fit, or why policy forbids it
    resource_name: str | None = None
    quantity: int | None = None
    mig_profile: str | None = None
    time_slice_replicas: int | None = None
    gpu_share: Decimal | None = None  # per unit
    hourly: Decimal | None = None  # every replica together
    monthly: Decimal | None = None
    duration_cost: Decimal | None = None
    run: RunEstimate | None = None


def _offered_pairs(offered: Iterable[tuple[str, str, str | None]]) -> set[tuple[str, Strategy]]:
    return {(model, Strategy(strategy)) for model, strategy, _ in offered}


def compare(
    profile: WorkloadProfile,
    catalog: Catalog,
    *,
    offered: Iterable[tuple[str, str, str | None]],
    tiers: Mapping[str, SlaTierSpec] = DEFAULT_TIERS_BY_SLUG,
    rates: Mapping[str, Decimal] | None = None,
    time_slice_replicas: Mapping[str, int | Iterable[int]] | None = None,
    gpus_per_node: Mapping[str, int] | None = None,
    mig_layouts: Mapping[tuple[str, str], Mapping[str, int]] | None = None,
    currency: str = "USD",
    default_time_slice_replicas: int = 4,
    reference_hours: Decimal | None = None,
    reference_model: str | None = None,
) -> tuple[WhatIfOption, ...]:
    """Every (model, strategy) in ``offered`` (model, strategy, MIG profile) triples, sized, priced and judged.

    Raises ``ProfileError`` for a profile no option can be judged for (an unknown tier or reference model, tier 1
    with one replica).
    """
    offers = set(offered)
    tier = None
    if profile.sla_tier is not None:
        tier = tiers.get(profile.sla_tier)
        if tier is None:
            raise ProfileError(
                {"sla_tier": [f"Unknown SLA tier '{profile.sla_tier}'. Known tiers: {', '.join(tiers)}."]}
            )
    check_replicas(profile, tier)
    reference = _reference(catalog, profile, reference_hours, reference_model)
    intent, _ = classify_intent(profile, [])
    forbidden, _ = apply_floors(profile, tier, intent, [], tier1_p99_ms=tier1_latency_ms(tiers.values()))
    ctx = DecisionContext(
        profile=profile,
        catalog=catalog,
        tier=tier,
        multiplier=tier.price_multiplier if tier else Decimal(1),
        currency=currency,
        rates=normalize_rates(rates or {}),
        pools=normalize_pools(time_slice_replicas or {}),
        default_time_slice_replicas=default_time_slice_replicas,
        forbidden=forbidden,
        offered=lambda model, strategy, mig: (model, strategy, mig) in offers,
        gpus_per_node=normalize_node_sizes(gpus_per_node or {}),
        mig_layouts=normalize_layouts(mig_layouts or {}),
    )
    pairs = _offered_pairs(offers)
    results: list[WhatIfOption] = []
    for model in catalog:
        for strategy in (Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING):
            if (model.name, strategy) in pairs:
                results.append(_judge(ctx, model, strategy, reference))
    results.sort(key=_rank)
    return tuple(results)


def _reference(
    catalog: Catalog, profile: WorkloadProfile, hours: Decimal | None, model_name: str | None
) -> tuple[GpuModelSpec, Decimal] | None:
    if hours is None and model_name is None:
        return None
    errors: dict[str, list[str]] = {}
    if hours is None or hours <= 0:
        errors["reference_hours"] = ["Give the hours one run takes on the reference model (a number > 0)."]
    model = None
    if model_name is None:
        errors["reference_gpu_model"] = ["Name the GPU model the reference hours were measured on."]
    else:
        try:
            model = catalog.get(model_name)
        except CatalogError as error:
            errors["reference_gpu_model"] = [str(error)]
    if model is not None and model.dense_fp16_tflops is None:
        errors["reference_gpu_model"] = [f"The catalog has no FP16 throughput for {model.name} to scale from."]
    if profile.workload_type not in PER_RUN_WORKLOADS:
        errors["reference_hours"] = ["Per-run estimates are for training and HPC simulation."]
    if errors:
        raise ProfileError(errors)
    assert model is not None and hours is not None
    return model, hours


def _judge(
    ctx: DecisionContext, model: GpuModelSpec, strategy: Strategy, reference: tuple[GpuModelSpec, Decimal] | None
) -> WhatIfOption:
    sized = size_option(ctx, model, strategy)
    if not isinstance(sized, Option):
        return WhatIfOption(model.name, strategy, fits=False, permitted=False, reason=str(sized))
    reason = why_not_permitted(ctx, sized)
    return WhatIfOption(
        gpu_model=model.name,
        strategy=strategy,
        fits=True,
        permitted=reason is None,
        reason=reason,
        resource_name=sized.resource_name,
        quantity=sized.quantity,
        mig_profile=sized.mig.name if sized.mig else None,
        time_slice_replicas=sized.time_slice_replicas,
        gpu_share=sized.unit_share,
        hourly=sized.hourly,
        monthly=sized.monthly,
        duration_cost=sized.duration_cost,
        run=_run(sized, reference),
    )


def _run(option: Option, reference: tuple[GpuModelSpec, Decimal] | None) -> RunEstimate | None:
    """Per-run estimate for a dedicated option: a shared GPU's speed is not known well enough to scale."""
    if reference is None or option.strategy is not Strategy.DEDICATED or option.model.dense_fp16_tflops is None:
        return None
    ref_model, ref_hours = reference
    assert ref_model.dense_fp16_tflops is not None
    speedup = option.model.dense_fp16_tflops / ref_model.dense_fp16_tflops
    hours = ref_hours / speedup
    cost = None if option.hourly is None else option.hourly * hours
    return RunEstimate(ref_model.name, ref_hours, speedup, hours, cost)


def _rank(option: WhatIfOption) -> tuple[bool, bool, bool, Decimal, str, int]:
    """Permitted and priced first, cheapest first (per run where estimated, else per month)."""
    price = option.run.cost if option.run is not None and option.run.cost is not None else option.monthly
    order = (Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING)
    return (
        not option.fits,
        not option.permitted,
        price is None,
        price if price is not None else Decimal(0),
        option.gpu_model,
        order.index(option.strategy),
    )


__all__ = ["PER_RUN_WORKLOADS", "RunEstimate", "WhatIfOption", "compare"]
