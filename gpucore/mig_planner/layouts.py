"""MIG layouts: the valid per-GPU instance multisets of a model, with their ``profile@start`` placement (pure).

Every layout is checked with the same checker the mig-parted ConfigMap uses
(``gpucore.manifests.gpu_operator.check_mig_layout``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from itertools import product

from gpucore.catalog import CatalogError, GpuModelSpec
from gpucore.manifests.gpu_operator import check_mig_layout, mig_placement
from gpucore.manifests.naming import ManifestError
from gpucore.pricing import gpu_share, share_text


class MigPlanError(ValueError):
    """A planning input that cannot be planned; ``field`` names the input at fault (for a 400 naming it)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True, slots=True)
class MigLayout:
    """One valid per-GPU MIG layout: instance counts in catalog order and a placement by start memory slice."""

    model_name: str
    instances: tuple[tuple[str, int], ...]
    placement: tuple[tuple[str, int], ...]

    def counts(self) -> dict[str, int]:
        return dict(self.instances)

    def capacity(self, profile: str) -> int:
        return self.counts().get(profile, 0)

    def placement_strings(self) -> list[str]:
        """The placement as ``["3g.20gb@4", "1g.5gb@0", ...]`` (start = first memory slice)."""
        return [f"{name}@{start}" for name, start in self.placement]

    @property
    def instance_count(self) -> int:
        return sum(count for _, count in self.instances)


def _profile_names(model: GpuModelSpec, *, media_extensions: bool) -> list[str]:
    return [p.name for p in model.mig_profiles if media_extensions or not p.media_extensions]


def layout_of(model: GpuModelSpec, counts: Mapping[str, int]) -> MigLayout:
    """The layout of ``counts`` on ``model`` with its placement; ``ManifestError`` when it is not a valid layout."""
    checked = check_mig_layout(model, {name: count for name, count in counts.items() if count})
    return MigLayout(model.name, tuple(checked.items()), tuple(mig_placement(model, checked)))


@lru_cache(maxsize=64)
def valid_layouts(model: GpuModelSpec, *, media_extensions: bool = False) -> tuple[MigLayout, ...]:
    """Every distinct non-empty instance multiset of ``model`` that has a valid placement (77 on 7-slice models).

    Media-extension (+me) profiles are left out unless asked for: at most one fits a GPU and the planner only needs
    them when the demand names one.
    """
    if not model.mig_capable:
        raise MigPlanError("gpu_model", f"{model.name} is not MIG-capable.")
    names = _profile_names(model, media_extensions=media_extensions)
    ranges = [range(model.profile(name).max_instances + 1) for name in names]
    layouts = []
    for counts in product(*ranges):
        if not any(counts):
            continue
        try:
            layouts.append(layout_of(model, dict(zip(names, counts, strict=True))))
        except ManifestError:
            continue
    return tuple(layouts)


def normalise_demand(model: GpuModelSpec, demand: Mapping[str, int], *, field_name: str = "demand") -> dict[str, int]:
    if not model.mig_capable:
        raise MigPlanError("gpu_model", f"{model.name} is not MIG-capable.")
    cleaned: dict[str, int] = {}
    for name, count in demand.items():
        try:
            model.profile(name)
        except CatalogError as error:
            raise MigPlanError(field_name, str(error)) from error
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise MigPlanError(field_name, f"The count of '{name}' must be a whole number >= 0.")
        if count:
            cleaned[name] = count
    return {p.name: cleaned[p.name] for p in model.mig_profiles if p.name in cleaned}


def candidate_layouts(model: GpuModelSpec, profiles: Iterable[str]) -> tuple[MigLayout, ...]:
    """The valid layouts made only of ``profiles`` (others are dominated: dropping an unused instance keeps a layout
    valid)."""
    wanted = set(profiles)
    media = any(model.profile(name).media_extensions for name in wanted)
    return tuple(
        layout
        for layout in valid_layouts(model, media_extensions=media)
        if all(name in wanted for name, _ in layout.instances)
    )


def layout_order(layout: MigLayout) -> tuple:
    return (-layout.instance_count, layout.instances)


def gpu_shares(model: GpuModelSpec, layout: MigLayout) -> dict[str, str]:
    """Each profile's GPU share on this layout, as the API's decimal strings (docs/cost-model.md)."""
    counts = layout.counts()
    return {
        name: share_text(gpu_share("mig", model=model, mig_profile=name, layout=counts)) for name, _ in layout.instances
    }
