"""recommend()'s and compare()'s arguments, checked and normalized: price book, time-sliced pools, MIG layouts, node
sizes, each keyed by the casefolded model name. Pure: no Django."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from decimal import Decimal
from types import MappingProxyType
from typing import Any


def normalize_rates(rates: Mapping[str, Decimal]) -> dict[str, Decimal]:
    result = {}
    for name, rate in rates.items():
        value = rate if isinstance(rate, Decimal) else Decimal(str(rate))
        if not value.is_finite() or value < 0:
            raise ValueError(f"The hourly rate of {name} must be a non-negative amount, not {rate!r}.")
        result[name.casefold()] = value
    return result


def normalize_pools(pools: Mapping[str, int | Iterable[int]]) -> dict[str, tuple[int, ...]]:
    """Each model's time-sliced pools' replicas (one number, or one per pool), distinct and most tenants first."""
    result = {}
    for name, value in pools.items():
        values = [value] if isinstance(value, int) else list(value)
        for replicas in values:
            if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 2:
                # The device plugin rejects a time-slicing config with replicas < 2 ("number of replicas must be >= 2").
                raise ValueError(f"The time-slicing replicas of {name} must be an integer >= 2, not {replicas!r}.")
        if values:
            result[name.casefold()] = tuple(sorted(set(values), reverse=True))
    return result


def normalize_layouts(
    layouts: Mapping[tuple[str, str], Mapping[str, int]],
) -> dict[tuple[str, str], dict[str, int]]:
    return {(model.casefold(), profile): dict(layout) for (model, profile), layout in layouts.items()}


def normalize_node_sizes(sizes: Mapping[str, int]) -> dict[str, int]:
    result = {}
    for name, gpus in sizes.items():
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise ValueError(f"The GPUs per node of {name} must be a positive integer, not {gpus!r}.")
        result[name.casefold()] = gpus
    return result


class OfferSet:
    """Node-pool offers given as data: the (model, strategy, MIG profile) triples some pool serves, called like any
    ``offered`` callback."""

    __slots__ = ("offers",)

    def __init__(self, offers: frozenset[tuple[str, str, str | None]]) -> None:
        self.offers = offers

    def __call__(self, model: str, strategy: str, mig_profile: str | None) -> bool:
        return (model, strategy, mig_profile) in self.offers


_EMPTY: Mapping[Any, Any] = MappingProxyType({})


class NodePools:
    """What a cluster's node pools tell ``recommend(pools=...)``, checked and normalised once: the options they offer,
    each model's time-sliced replicas, its dedicated nodes' largest size, the MIG layout serving each (model, profile).

    The same as passing ``offered`` (a set), ``time_slice_replicas``, ``gpus_per_node`` and ``mig_layouts``, without
    normalising them again on every call: a caller that keeps one per version of its pools (placement) pays that once.
    Read-only once built.
    """

    __slots__ = ("gpus_per_node", "mig_layouts", "offered", "time_slice_replicas")

    def __init__(
        self,
        *,
        offers: Set[tuple[str, str, str | None]],
        time_slice_replicas: Mapping[str, int | Iterable[int]] | None = None,
        gpus_per_node: Mapping[str, int] | None = None,
        mig_layouts: Mapping[tuple[str, str], Mapping[str, int]] | None = None,
    ) -> None:
        self.offered = OfferSet(frozenset(offers))
        self.time_slice_replicas = _frozen(normalize_pools(time_slice_replicas or {}))
        self.gpus_per_node = _frozen(normalize_node_sizes(gpus_per_node or {}))
        layouts = normalize_layouts(mig_layouts or {})
        self.mig_layouts = _frozen({where: MappingProxyType(layout) for where, layout in layouts.items()})

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, name):
            raise AttributeError(f"NodePools is read-only: {name} cannot change.")
        object.__setattr__(self, name, value)


def _frozen(mapping: dict[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(mapping) if mapping else _EMPTY
