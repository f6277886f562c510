"""The options the decision framework weighs: one way to run a profile on one model, sized and priced. Pure: no Django.

Memory: ``gpu_memory_gb`` is the peak GPU memory one replica needs, spread evenly over its ``gpu_count`` GPUs. A
dedicated allocation fits when ``gpu_memory_gb / gpu_count <= memory of one GPU``; a MIG slice when its profile has at
least ``gpu_memory_gb``; a time-sliced share when ``gpu_memory_gb <= memory / time-slice replicas``, because
time-slicing has no memory isolation and a tenant can only count on a fair share (guide Part 2.2). Comparisons multiply
instead of dividing so boundaries such as exactly 10 GB are exact.

Also here: the small prose helpers (GB, percentages, money) every explanation shares. The results themselves
(``Recommendation``, ``Alternative``) are in ``results``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from gpucore import formatting
from gpucore.catalog import Catalog, GpuModelSpec, MigProfile
from gpucore.decision.inputs import OfferSet
from gpucore.decision.results import (
    EXPECTED_OVERHEAD_PCT,
    ISOLATION,
    UTILIZATION_TARGET_PCT,
    AllocationOption,
    core_json_of,
)
from gpucore.pricing import (
    CATALOG_PRICE_BASIS,
    allocation_hourly_rate,
    catalog_hourly_rate,
    gpu_share,
    mig_weight,
    monthly_cost,
)
from gpucore.profile import WorkloadProfile
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import Strategy

# The catalog's reference prices (cloud list price, or TCO from a USD purchase price) are in US dollars.
CATALOG_CURRENCY = "USD"

_ONE, _HUNDRED = Decimal(1), Decimal(100)
STRATEGY_WORDS = {Strategy.DEDICATED: "a dedicated GPU", Strategy.MIG: "MIG", Strategy.TIME_SLICING: "time-slicing"}
# ``Strategy.MIG`` is read through the enum's class, about 0.3 us a time on Python 3.11; the framework reads these
# module constants instead on every option it weighs.
DEDICATED, MIG, TIME_SLICING = Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING


@dataclass(frozen=True, slots=True, eq=False)
class Option:
    """One way to run the profile on one model, sized and priced (internal).

    Compared by identity: ``size_option`` hands out one object per distinct sizing and price in a process.
    """

    model: GpuModelSpec
    strategy: Strategy
    quantity: int
    mig: MigProfile | None
    time_slice_replicas: int | None
    time_slice_source: str | None
    share: Decimal  # GPUs paid for per replica
    gpu_rate: Decimal | None  # hourly price of one whole GPU
    rate_source: str | None
    hourly: Decimal | None  # every replica together, SLA multiplier included; None when no price is known
    monthly: Decimal | None  # unrounded; None when no price is known
    duration_cost: Decimal | None = None  # for the profile's duration_hours; None without a duration or a price
    # ``core_values``, worked out once (the option's key holds the replicas, duration and currency they include).
    core: tuple[Any, ...] | None = field(default=None, init=False, repr=False)
    # The rationale's cost sentence for this option (``explain.cost_line``), once.
    cost_words: str | None = field(default=None, init=False, repr=False)
    # The JSON of ``core`` (``results.core_json_of``), once; answers get copies.
    json: dict[str, Any] | None = field(default=None, init=False, repr=False)

    @property
    def resource_name(self) -> str:
        return self.mig.resource_name if self.mig else "nvidia.com/gpu"

    @property
    def unit_share(self) -> Decimal:
        """The GPU share of one allocated unit (one GPU, one MIG instance, one time-sliced share)."""
        return self.share / self.quantity

    @property
    def saving_pct(self) -> Decimal:
        # Against the same profile on dedicated GPUs of the same model: the price and SLA multiplier cancel out,
        # so the saving is known even when the price is not.
        return (_ONE - self.share / self.quantity) * _HUNDRED


@dataclass(frozen=True, slots=True)
class DecisionContext:
    """Everything ``recommend`` resolved from its arguments (internal)."""

    profile: WorkloadProfile
    catalog: Catalog
    tier: SlaTierSpec | None
    multiplier: Decimal
    currency: str
    rates: Mapping[str, Decimal]  # casefolded model name -> hourly rate
    pools: Mapping[str, tuple[int, ...]]  # casefolded model name -> its time-sliced pools' replicas, most first
    default_time_slice_replicas: int
    forbidden: Mapping[Strategy, str]  # strategy -> why policy rules it out
    # (model name, strategy, MIG profile name) -> whether a node pool serves it; None = every option exists.
    offered: Callable[[str, str, str | None], bool] | None = None
    # casefolded model name -> the most GPUs one node of a dedicated pool has; empty = node size unknown
    gpus_per_node: Mapping[str, int] = field(default_factory=dict)
    # (casefolded model name, MIG profile) -> the per-GPU layout of the pool that serves it; the GPU share then
    # scales by the layout's weight (DESIGN.md "GPU share"), as chargeback does.
    mig_layouts: Mapping[tuple[str, str], Mapping[str, int]] = field(default_factory=dict)
    # ``pools``, ``gpus_per_node`` and ``mig_layouts`` as one hashable value where the caller gave them as a
    # ``NodePools`` (read-only, hashed by identity); None: the keys are built from the mappings.
    node_pools: object | None = None
    # Memos of one decision: one recommendation sizes each (model, strategy) and walks each model several times
    # (choosing, then listing alternatives), and asks a pool callback per option; each is worked out once.
    # ``replace()`` starts them empty, as a context with other inputs must.
    sized: dict[tuple[str, Strategy], Option | str] = field(default_factory=dict, init=False, repr=False, compare=False)
    walked: dict[str, tuple[Any, Any, Option | None]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )
    offers: dict[tuple[str, str, str | None], bool] = field(default_factory=dict, init=False, repr=False, compare=False)
    _price_key: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)
    _walk_key: tuple[Any, ...] | None = field(default=None, init=False, repr=False, compare=False)
    # model name -> its GPU rate, where the rate comes from, and the key prefix of its options (``size_option``)
    rated: dict[str, tuple[Decimal | None, str | None, tuple[Any, ...]]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def price_key(self) -> tuple[Any, ...]:
        """What besides the model, sizing and GPU rate decides an option's figures (exact: ``1.50`` is not ``1.5``)."""
        key = self._price_key
        if key is None:
            profile = self.profile
            duration = profile.duration_hours
            key = (
                profile.gpu_count,
                profile.replicas,
                None if duration is None else str(duration),
                str(self.multiplier),
                self.currency,
            )
            object.__setattr__(self, "_price_key", key)
        return key

    @property
    def walk_key(self) -> tuple[Any, ...]:
        """Everything but the memory that decides which option a silent walk of a model gives (``steps``)."""
        key = self._walk_key
        if key is None:
            tier = self.tier
            defaults: tuple[Any, ...] = (self.default_time_slice_replicas,)
            if tier is not None and tier.default_time_slice_replicas is not None:
                defaults = (tier.default_time_slice_replicas, tier.name, tier.slug)
            rates = self.rates
            key = (
                self.price_key,
                defaults,
                tuple((name, str(rate)) for name, rate in rates.items()) if rates else (),
                self.pools_key(with_layouts=True),
            )
            object.__setattr__(self, "_walk_key", key)
        return key

    def pools_key(self, *, with_layouts: bool) -> object:
        """The time-sliced pools and node sizes (and the MIG layouts), hashable: ``node_pools`` where given."""
        if self.node_pools is not None:
            return self.node_pools
        key: tuple[Any, ...] = (tuple(self.pools.items()), tuple(self.gpus_per_node.items()))
        if with_layouts:
            layouts = self.mig_layouts
            key += (tuple((where, tuple(layout.items())) for where, layout in layouts.items()) if layouts else (),)
        return key

    def is_offered(self, option: Option) -> bool:
        offered = self.offered
        if offered is None:
            return True
        key = (option.model.name, option.strategy.value, option.mig.name if option.mig else None)
        if offered.__class__ is OfferSet:
            return key in offered.offers  # type: ignore[union-attr]
        known = self.offers.get(key)
        if known is None:
            known = self.offers[key] = bool(self.offered(*key))
        return known

    def lookup(self, table: Mapping[str, Any], model: GpuModelSpec) -> Any:
        if not table:
            return None
        for key in model.folded_names:
            if key in table:
                return table[key]
        return None


def core_values(ctx: DecisionContext, option: Option) -> tuple[Any, ...]:
    """``core_fields`` in ``AllocationOption``'s field order, for positional construction (one per alternative)."""
    if option.core is None:
        object.__setattr__(option, "core", _core_values(ctx, option))
    return option.core


def _core_values(ctx: DecisionContext, option: Option) -> tuple[Any, ...]:
    strategy = option.strategy
    return (
        strategy,
        option.mig.resource_name if option.mig else "nvidia.com/gpu",
        option.quantity,
        ctx.profile.replicas,
        option.model.name,
        option.mig.name if option.mig else None,
        option.time_slice_replicas,
        option.model.node_selector,
        EXPECTED_OVERHEAD_PCT[strategy],
        UTILIZATION_TARGET_PCT[strategy],
        ISOLATION[strategy],
        option.monthly,
        ctx.currency,
        option.saving_pct,
        option.unit_share,
        option.duration_cost,
        ctx.profile.duration_hours,
    )


def core_json(ctx: DecisionContext, option: Option) -> dict[str, Any]:
    """The JSON of ``core_values``, worked out once per option (shared: never change it, copy it)."""
    if option.json is None:
        object.__setattr__(option, "json", core_json_of(core_values(ctx, option)))
    return option.json


def core_fields(ctx: DecisionContext, option: Option) -> dict[str, Any]:
    return dict(zip(_CORE_NAMES, core_values(ctx, option), strict=True))


_CORE_NAMES = tuple(f.name for f in fields(AllocationOption))


def model_plan_in(plan: tuple[Strategy, ...], order: tuple[Strategy, ...]) -> tuple[Strategy, ...]:
    """The strategies of a model's plan that the floors left in ``order`` (a few dozen combinations: once each)."""
    key = (plan, order)
    kept = _PLANS.get(key)
    if kept is None:
        kept = _PLANS[key] = tuple(s for s in plan if s in order)
    return kept


_PLANS: dict[tuple[tuple[Strategy, ...], tuple[Strategy, ...]], tuple[Strategy, ...]] = {}


# --- fit, size and price ---------------------------------------------------------------------------------------


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
    """The option of running the profile on ``model`` with ``strategy``, or why it does not fit (once per context)."""
    key = (model.name, strategy)
    sized = ctx.sized.get(key)
    if sized is None:
        sized = ctx.sized[key] = size_fresh(ctx, model, strategy)
    return sized


def size_fresh(ctx: DecisionContext, model: GpuModelSpec, strategy: Strategy) -> Option | Misfit:
    """``size_option`` without its memo: for a caller that just looked there (``ctx.sized``, key (model, strategy))."""
    profile = ctx.profile
    memory, n = profile.gpu_memory_gb, profile.gpu_count
    mig: MigProfile | None = None
    layout: Mapping[str, int] | None = None
    replicas: int | None = None
    source: str | None = None
    if strategy is DEDICATED:
        if memory > model.memory_gb * n:
            return Misfit(lambda: f"{need_text(profile)} does not fit on {model.name} ({model.memory_gb} GB per GPU).")
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
    return intern_option(ctx, model, strategy, mig, layout, replicas, source)


def intern_option(
    ctx: DecisionContext,
    model: GpuModelSpec,
    strategy: Strategy,
    mig: MigProfile | None,
    layout: Mapping[str, int] | None,
    replicas: int | None,
    source: str | None,
) -> Option:
    """The option of this sizing, priced: the process's one object for it (made on first use)."""
    rated = ctx.rated.get(model.name)
    if rated is None:
        rate, rate_source = _gpu_rate(ctx, model)
        rated = ctx.rated[model.name] = (rate, rate_source, (id(model), str(rate), rate_source, ctx.price_key))
    rate, rate_source, prefix = rated
    # The same sizing and price give the same option, one object per process: the framework's explanations of an
    # option (alternatives, tradeoffs, JSON) are then worked out once and found again by it (framework._alternative).
    key = (
        prefix,
        strategy,
        mig.name if mig is not None else None,
        tuple(layout.items()) if layout else None,
        replicas,
        source,
    )
    option = _OPTIONS.get(key)
    if option is None or option.model is not model:
        if len(_OPTIONS) >= _OPTIONS_LIMIT:  # bounded: other price books and tiers bring new options
            _OPTIONS.clear()
        option = _OPTIONS[key] = _priced(ctx, model, strategy, mig, layout, replicas, source, rate, rate_source)
    return option


# The options worked out in this process, by what decides them (the entry keeps its model alive: id() stays unique).
_OPTIONS: dict[tuple[Any, ...], Option] = {}
_OPTIONS_LIMIT = 16_384


def _priced(
    ctx: DecisionContext,
    model: GpuModelSpec,
    strategy: Strategy,
    mig: MigProfile | None,
    layout: Mapping[str, int] | None,
    replicas: int | None,
    source: str | None,
    rate: Decimal | None,
    rate_source: str | None,
) -> Option:
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
    for replicas in candidates:
        if memory * replicas <= model.memory_gb * n:
            if default is None or replicas == default:
                return replicas, default_source
            return replicas, f"{default_source} of {default} lowered so that a share holds the replica"
    fewest = candidates[-1]
    where = "its pools here have" if pools else "even"
    return Misfit(
        lambda: (
            f"Time-slicing does not fit on {model.name}: {format_gb(memory / n)} is more than a fair share with "
            f"{where} {fewest} tenants per GPU ({model.memory_gb} GB / {fewest} = "
            f"{format_gb(Decimal(model.memory_gb) / fewest)}); time-slicing has no memory isolation, so a tenant can "
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
    smallest = next((p for p in model.recommendable_profiles() if p.memory_gb * n >= memory), None)
    if ctx.offered is None:
        return smallest
    offered = [
        p
        for p in model.mig_profiles
        if p.compute_slices < model.mig_compute_slices
        and p.memory_gb * n >= memory
        and ctx.offered(model.name, MIG.value, p.name)
    ]
    if not offered:
        return smallest  # not offered: the caller says so and moves on
    return min(offered, key=lambda p: (mig_weight(model, p), p.memory_gb, p.compute_slices, p.name))


def _no_mig_profile(model: GpuModelSpec, profile: WorkloadProfile) -> str:
    partial = model.recommendable_profiles()
    largest = f" (largest partial profile: {partial[-1].name})" if partial else ""
    full = next((p for p in model.mig_profiles if p.compute_slices == model.mig_compute_slices), None)
    need = format_gb(profile.gpu_memory_gb / profile.gpu_count)
    if full is not None and full.memory_gb * profile.gpu_count >= profile.gpu_memory_gb:
        return (
            f"No partial MIG profile of {model.name} holds {need}{largest}; only the full-GPU profile {full.name} "
            "would, and a whole GPU is better served as a dedicated GPU."
        )
    return f"No MIG profile of {model.name} holds {need}{largest}."


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
        return None, None  # never convert currencies by guess (DESIGN.md: money is never guessed)
    rate = catalog_hourly_rate(model)
    if rate is None:
        return None, None
    return rate, CATALOG_PRICE_BASIS


# --- prose helpers -------------------------------------------------------------------------------------------


def need_text(profile: WorkloadProfile) -> str:
    if profile.gpu_count == 1:
        return f"A replica needs {format_gb(profile.gpu_memory_gb)} on one GPU"
    per_gpu = format_gb(profile.gpu_memory_gb / profile.gpu_count)
    return f"A replica needs {format_gb(profile.gpu_memory_gb)} over {profile.gpu_count} GPUs ({per_gpu} per GPU)"


def format_gb(value: Decimal | int) -> str:
    return f"{_plain(Decimal(value))} GB"


def _pct(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.1'), ROUND_HALF_UP)}%"


def format_money(amount: Decimal, currency: str) -> str:
    """Money in prose, in the portal's one format (``gpucore.formatting``): ``5,022.40 USD``."""
    return formatting.format_money(amount, currency)


def _plain(value: Decimal) -> str:
    """A number for prose: at most two decimals, no trailing zeros, no exponent (13.33, 10, 5.01)."""
    rounded = value.quantize(Decimal("0.01"), ROUND_HALF_UP).normalize()
    return f"{rounded:f}"
