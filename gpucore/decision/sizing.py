"""Fit, size and price one option: whether a profile fits a model with a strategy, and if so the option, priced; if
not, why (``Misfit``). Pure: no Django.

Memory: ``gpu_memory_gb`` is the peak GPU memory (GiB) one replica needs, spread evenly over its ``gpu_count`` GPUs.
It is fitted against the memory a process can really use (``gpucore.usable_memory``: 19.62 GiB on a ``3g.20gb``, not
20) and must stay at or under 85 % of it, the memory-pressure alert's line. A dedicated allocation fits when
``gpu_memory_gb / gpu_count <= 85 % of one GPU's usable memory``; a MIG slice when ``gpu_memory_gb / gpu_count <= 85 %
of the slice's``; a time-sliced share when ``gpu_memory_gb / gpu_count <= 85 % of usable / time-slice replicas``,
because time-slicing has no memory isolation and a tenant can only count on a fair share (guide Part 2.2).
Comparisons multiply instead of dividing so boundaries are exact.

Apart from ``options`` (what an option and a decision's context are) because this is the arithmetic of fitting and
pricing, which ``whatif`` calls into as well as the framework's walks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import Decimal

from gpucore.catalog import GpuModelSpec, MigProfile
from gpucore.decision.options import CATALOG_CURRENCY, DEDICATED, MIG, DecisionContext, Option
from gpucore.decision.prose import format_gb, need_text
from gpucore.pricing import (
    CATALOG_PRICE_BASIS,
    allocation_hourly_rate,
    catalog_hourly_rate,
    gpu_share,
    mig_weight,
    monthly_cost,
)
from gpucore.profile import WorkloadProfile
from gpucore.usable_memory import HEADROOM_RATIO, usable_gib, with_headroom
from gpucore.vocabulary import Strategy


class Misfit:
    """Why an option does not fit, worded only when read: most walks never show it (``str()`` gives the sentence)."""

    __slots__ = ("_words",)

    def __init__(self, words: Callable[[], str]) -> None:
        self._words = words

    def __str__(self) -> str:
        return self._words()

    def __repr__(self) -> str:
        return f"Misfit({self._words()!r})"


def size_option(ctx: DecisionContext, model: GpuModelSpec, strategy: Strategy) -> Option | Misfit:
    """The option of running the profile on ``model`` with ``strategy``, priced, or why it does not fit."""
    profile = ctx.profile
    memory, n = profile.gpu_memory_gb, profile.gpu_count
    mig: MigProfile | None = None
    layout: Mapping[str, int] | None = None
    replicas: int | None = None
    source: str | None = None
    if strategy is DEDICATED:
        usable = usable_gib(model)
        if memory > usable * HEADROOM_RATIO * n:
            return Misfit(
                lambda: (
                    f"{need_text(profile)}: it needs {format_gb(with_headroom(memory / n))} per GPU with headroom, "
                    f"one {model.name} offers {format_gb(usable)}."
                )
            )
        node_gpus = ctx.lookup(ctx.gpus_per_node, model) if ctx.gpus_per_node else None
        if node_gpus is not None and n > node_gpus:
            return Misfit(
                lambda: (
                    f"{n} GPUs per replica do not fit on one {model.name} node here (at most {node_gpus} GPUs "
                    "per node), and a replica's GPUs must share a node."
                )
            )
    elif strategy is MIG:
        if not model.mig_capable:
            return Misfit(lambda: f"{model.name} is not MIG-capable ({model.family}).")
        mig = _mig_profile_for(ctx, model)
        if mig is None:
            return Misfit(lambda: _no_mig_profile(model, profile))
        if ctx.mig_layouts:
            layout = ctx.mig_layouts.get((model.name.casefold(), mig.name))
    else:
        fitted = _time_slice_fit(ctx, model)
        if isinstance(fitted, Misfit):
            return fitted
        replicas, source = fitted
    return _priced(ctx, model, strategy, mig, layout, replicas, source)


def _priced(
    ctx: DecisionContext,
    model: GpuModelSpec,
    strategy: Strategy,
    mig: MigProfile | None,
    layout: Mapping[str, int] | None,
    replicas: int | None,
    source: str | None,
) -> Option:
    rate, rate_source = _gpu_rate(ctx, model)
    profile = ctx.profile
    n = profile.gpu_count
    if strategy is DEDICATED:
        share = Decimal(n)
    elif strategy is MIG:
        share = gpu_share(strategy, model=model, mig_profile=mig, layout=layout) * n
    else:
        share = gpu_share(strategy, model=model, time_slice_replicas=replicas) * n
    hourly = monthly = duration_cost = None
    if rate is not None:
        hourly = allocation_hourly_rate(rate, share, ctx.multiplier) * Decimal(profile.replicas)
        monthly = monthly_cost(allocation_hourly_rate(rate, share, ctx.multiplier), profile.replicas)
        if profile.duration_hours is not None:
            duration_cost = hourly * profile.duration_hours
    return Option(model, strategy, n, mig, replicas, source, share, rate, rate_source, hourly, monthly, duration_cost)


def _time_slice_fit(ctx: DecisionContext, model: GpuModelSpec) -> tuple[int, str] | Misfit:
    """The most tenants per GPU whose fair share holds the replica, and where that number comes from; else why not.

    With time-sliced pools of the model, only their replicas count (most tenants first: the cheapest share that
    fits). Without one, the tier's or the portal's default, lowered to as few as 2 tenants when a share of the default
    size is too small: development and batch work stay time-sliced as long as some share fits.
    """
    memory, n = ctx.profile.gpu_memory_gb, ctx.profile.gpu_count
    pools = ctx.lookup(ctx.pools, model)
    if pools:
        candidates = list(pools)
        default, default_source = None, "the pool's setting"
    else:
        default, default_source = time_slice_default(ctx)
        candidates = list(range(default, 1, -1))
    usable = usable_gib(model) * HEADROOM_RATIO
    for replicas in candidates:
        if memory * replicas <= usable * n:
            if default is None or replicas == default:
                return replicas, default_source
            return replicas, f"{default_source} of {default} lowered so that a share holds the replica"
    fewest = candidates[-1]
    where = "its pools here have" if pools else "even"
    return Misfit(
        lambda: (
            f"Time-slicing does not fit on {model.name}: {format_gb(memory / n)} needs "
            f"{format_gb(with_headroom(memory / n))} with headroom, more than a fair share with {where} {fewest} "
            f"tenants per GPU ({format_gb(usable_gib(model))} / {fewest} = "
            f"{format_gb(usable_gib(model) / fewest)}); time-slicing has no memory isolation, so a tenant can "
            "only count on its share."
        )
    )


def fewest_time_slice_replicas(ctx: DecisionContext, model: GpuModelSpec) -> int:
    """The fewest tenants per GPU the model can be time-sliced with here: its pools' smallest, else 2."""
    pools = ctx.lookup(ctx.pools, model)
    return pools[-1] if pools else 2


def _mig_profile_for(ctx: DecisionContext, model: GpuModelSpec) -> MigProfile | None:
    """The smallest recommendable partial profile holding the replica's memory; where node pools are known, the
    smallest one a pool offers (a profile an operator configured counts even if not on the recommendable list)."""
    memory, n = ctx.profile.gpu_memory_gb, ctx.profile.gpu_count
    smallest = next((p for p in model.recommendable_profiles() if slice_holds(model, p, memory, n)), None)
    if ctx.offered is None:
        return smallest
    offered = [
        p
        for p in model.mig_profiles
        if p.compute_slices < model.mig_compute_slices
        and slice_holds(model, p, memory, n)
        and ctx.offered(model.name, MIG.value, p.name)
    ]
    if not offered:
        return smallest  # not offered: the caller says so and moves on
    return min(offered, key=lambda p: (mig_weight(model, p), p.memory_gb, p.compute_slices, p.name))


def slice_holds(model: GpuModelSpec, mig: MigProfile, memory: Decimal, gpu_count: int) -> bool:
    """True when ``gpu_count`` slices hold ``memory`` GiB within 85 % of their usable memory."""
    return memory <= usable_gib(model, mig) * HEADROOM_RATIO * gpu_count


def _no_mig_profile(model: GpuModelSpec, profile: WorkloadProfile) -> str:
    partial = model.recommendable_profiles()
    full = next((p for p in model.mig_profiles if p.compute_slices == model.mig_compute_slices), None)
    need = format_gb(profile.gpu_memory_gb / profile.gpu_count)
    why = f"it needs {format_gb(with_headroom(profile.gpu_memory_gb / profile.gpu_count))} with headroom"
    if partial:
        why += f", the largest partial slice, {partial[-1].name}, offers {format_gb(usable_gib(model, partial[-1]))}"
    if full is not None and slice_holds(model, full, profile.gpu_memory_gb, profile.gpu_count):
        return (
            f"No partial MIG profile of {model.name} holds {need} ({why}); only the full-GPU profile {full.name} "
            "would, and a whole GPU is better served as a dedicated GPU."
        )
    return f"No MIG profile of {model.name} holds {need}: {why}."


def time_slice_default(ctx: DecisionContext) -> tuple[int, str]:
    """Tenants per GPU where no time-sliced pool of the model says, and where that number comes from."""
    if ctx.tier is not None and ctx.tier.default_time_slice_replicas is not None:
        if ctx.tier.default_time_slice_replicas < 2:
            raise ValueError(f"SLA tier {ctx.tier.slug} has default_time_slice_replicas < 2.")
        # Part 4.3: tier3_development -> time_slicing_4x.
        return ctx.tier.default_time_slice_replicas, f"the {ctx.tier.name} default"
    return ctx.default_time_slice_replicas, "the portal default"


def _gpu_rate(ctx: DecisionContext, model: GpuModelSpec) -> tuple[Decimal | None, str | None]:
    """The hourly price of one whole GPU: the price book's, else the catalog's reference price in USD, else None."""
    rate = ctx.lookup(ctx.rates, model)
    if rate is not None:
        return rate, "price book"
    if ctx.currency != CATALOG_CURRENCY:
        return None, None  # never convert currencies by guess: money is never guessed
    rate = catalog_hourly_rate(model)
    if rate is None:
        return None, None
    return rate, CATALOG_PRICE_BASIS
