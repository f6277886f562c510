"""recommend()'s and compare()'s arguments, checked and normalized: price book, time-sliced pools, MIG layouts, node
sizes, each keyed by the casefolded model name. Pure: no Django."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal


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
