"""The options the decision framework weighs: what one option is (one way to run a profile on one model, sized and
priced: ``Option``), what one decision resolved from its arguments (``DecisionContext``), and an option's answer fields
(``core_values``, ``core_json``). Pure: no Django.

The vocabulary every other decision module shares, so it depends on none of them but ``inputs`` and ``results``.
Whether an option fits and what it costs is worked out in ``sizing``; the prose helpers are in ``prose``; the results
themselves (``Recommendation``, ``Alternative``) are in ``results``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

from gpucore.catalog import Catalog, GpuModelSpec, MigProfile
from gpucore.decision.inputs import OfferSet
from gpucore.decision.results import (
    EXPECTED_OVERHEAD_PCT,
    ISOLATION,
    UTILIZATION_TARGET_PCT,
    AllocationOption,
    core_json_of,
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
STRATEGIES = tuple(Strategy)  # iterating the enum class itself is slow on Python 3.11


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
