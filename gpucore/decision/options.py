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
from gpucore.decision.results import (
    EXPECTED_OVERHEAD_PCT,
    ISOLATION,
    UTILIZATION_TARGET_PCT,
    AllocationOption,
)
from gpucore.profile import WorkloadProfile
from gpucore.sla import SlaTierSpec
from gpucore.vocabulary import Strategy

# The catalog's reference prices (cloud list price, or TCO from a USD purchase price) are in US dollars.
CATALOG_CURRENCY = "USD"

_ONE, _HUNDRED = Decimal(1), Decimal(100)
STRATEGY_WORDS = {Strategy.DEDICATED: "a dedicated GPU", Strategy.MIG: "MIG", Strategy.TIME_SLICING: "time-slicing"}
DEDICATED, MIG, TIME_SLICING = Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING
STRATEGIES = tuple(Strategy)


@dataclass(frozen=True, slots=True)
class Option:
    """One way to run the profile on one model, sized and priced (internal)."""

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
    # scales by the layout's weight (docs/cost-model.md, "The arithmetic"), as chargeback does.
    mig_layouts: Mapping[tuple[str, str], Mapping[str, int]] = field(default_factory=dict)

    def is_offered(self, option: Option) -> bool:
        if self.offered is None:
            return True
        return bool(self.offered(option.model.name, option.strategy.value, option.mig.name if option.mig else None))

    def lookup(self, table: Mapping[str, Any], model: GpuModelSpec) -> Any:
        if not table:
            return None
        for key in model.folded_names:
            if key in table:
                return table[key]
        return None


def core_values(ctx: DecisionContext, option: Option) -> tuple[Any, ...]:
    """``AllocationOption``'s fields in its order, for positional construction (the answer and each alternative)."""
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


def core_fields(ctx: DecisionContext, option: Option) -> dict[str, Any]:
    return dict(zip(_CORE_NAMES, core_values(ctx, option), strict=True))


_CORE_NAMES = tuple(f.name for f in fields(AllocationOption))
