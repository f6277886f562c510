"""The GPU model and MIG profile catalog: pure data, no Django.

Built from NVIDIA's MIG profile tables and placements, board power, and sourced purchase and cloud prices (each
source in docs/reference-sources.md, "MIG" and "GPU catalog"). The ``GpuModel``
table is seeded from ``BUILTIN_CATALOG`` by a data migration; at run time the decision framework receives a
``Catalog`` built from that table by a selector, so admins can edit prices and labels without a deploy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal

_PROFILE_NAME = re.compile(r"^(?P<compute>\d+)g\.(?P<memory>\d+)gb(?P<media>\+me)?$")
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
# The device plugin's resource for a media-extension profile replaces '+' (not allowed in a resource name) by '.':
# profile 1g.5gb+me is advertised as nvidia.com/mig-1g.5gb.me.
_MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(?P<profile>\d+g\.\d+gb)(?P<media>\.me)?$")


def mig_resource_name(profile: str) -> str:
    """The extended resource the device plugin advertises for a MIG profile (mixed strategy); ``+me`` -> ``.me``."""
    return MIG_RESOURCE_PREFIX + profile.replace("+me", ".me")


def mig_profile_of_resource(resource_name: str) -> str | None:
    """The MIG profile name behind a resource name (``nvidia.com/mig-1g.5gb.me`` -> ``1g.5gb+me``), else ``None``."""
    match = _MIG_RESOURCE.match(resource_name)
    if not match:
        return None
    return match["profile"] + ("+me" if match["media"] else "")


class CatalogError(ValueError):
    """A catalog lookup or definition that cannot be satisfied."""


@dataclass(frozen=True, slots=True)
class MigProfile:
    """One MIG GPU-instance profile of a GPU model, e.g. ``2g.10gb`` on an A100-40GB."""

    name: str
    memory_gb: int
    compute_slices: int
    memory_slices: int
    max_instances: int
    placement_starts: tuple[int, ...] = ()
    # Profiles the decision framework may pick. Media-extension (+me) profiles exist once per GPU and the
    # two-memory-slice 1g profiles (1g.10gb on A100-40GB, 1g.20gb on 80 GB parts) need newer drivers; both
    # stay in the catalog for configs and billing but are not recommended by default.
    recommendable: bool = True

    @property
    def resource_name(self) -> str:
        """The extended resource the device plugin advertises for this profile (mixed strategy)."""
        return mig_resource_name(self.name)

    @property
    def media_extensions(self) -> bool:
        return self.name.endswith("+me")

    @staticmethod
    def parse_name(name: str) -> tuple[int, int]:
        """Return ``(compute_slices, memory_gb)`` from a profile name such as ``3g.20gb``."""
        match = _PROFILE_NAME.match(name)
        if not match:
            raise CatalogError(f"'{name}' is not a MIG profile name like '2g.10gb'.")
        return int(match["compute"]), int(match["memory"])


@dataclass(frozen=True, slots=True)
class GpuModelSpec:
    """A GPU model as the portal knows it: memory, labels, power, prices and MIG geometry."""

    name: str
    memory_gb: int
    product_label: str
    tdp_watts: int
    family: str
    purchase_price_usd: Decimal | None = None
    list_hourly_usd: Decimal | None = None
    mig_compute_slices: int = 0
    mig_memory_slices: int = 0
    mig_profiles: tuple[MigProfile, ...] = ()
    dcgm_model_names: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    notes: str = ""
    # Where ``list_hourly_usd`` comes from, or why there is none (every model says one or the other).
    price_source: str = ""
    # Dense (no sparsity) FP16/BF16 tensor throughput from NVIDIA's datasheet, for the what-if's per-run estimates.
    dense_fp16_tflops: Decimal | None = None
    throughput_source: str = ""
    # Derived once (the spec is frozen): the framework asks for them for every model of every recommendation.
    _recommendable: tuple[MigProfile, ...] = field(init=False, repr=False, compare=False)
    _node_selector: tuple[tuple[str, str], ...] = field(init=False, repr=False, compare=False)
    folded_names: tuple[str, ...] = field(init=False, repr=False, compare=False)  # name and aliases, casefolded

    def __post_init__(self) -> None:
        partial = [p for p in self.mig_profiles if p.recommendable and p.compute_slices < self.mig_compute_slices]
        object.__setattr__(
            self, "_recommendable", tuple(sorted(partial, key=lambda p: (p.memory_gb, p.compute_slices)))
        )
        object.__setattr__(self, "_node_selector", (("nvidia.com/gpu.product", self.product_label),))
        object.__setattr__(self, "folded_names", tuple(key.casefold() for key in (self.name, *self.aliases)))

    @property
    def mig_capable(self) -> bool:
        return bool(self.mig_profiles)

    @property
    def node_selector(self) -> dict[str, str]:
        """The node selector that pins a pod to this model (GPU Feature Discovery's product label)."""
        return dict(self._node_selector)

    def profile(self, name: str) -> MigProfile:
        for profile in self.mig_profiles:
            if profile.name == name:
                return profile
        known = ", ".join(p.name for p in self.mig_profiles) or "none (not MIG-capable)"
        raise CatalogError(f"{self.name} has no MIG profile '{name}'. Its profiles: {known}.")

    def recommendable_profiles(self) -> tuple[MigProfile, ...]:
        """Partial-GPU profiles the framework may choose, smallest first.

        The full-GPU profile (7g.*, or 4g.24gb on A30) is left out: a whole GPU is better served as a dedicated GPU.
        """
        return self._recommendable


@dataclass(frozen=True)
class Catalog:
    """An immutable set of GPU models with case-insensitive lookup by name or alias."""

    models: tuple[GpuModelSpec, ...]
    _index: dict[str, GpuModelSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, GpuModelSpec] = {}
        for model in self.models:
            for key in (model.name, *model.aliases):
                folded = key.casefold()
                if folded in index and index[folded] is not model:
                    raise CatalogError(f"GPU model name or alias '{key}' is defined twice.")
                index[folded] = model
        object.__setattr__(self, "_index", index)

    def __iter__(self) -> Iterator[GpuModelSpec]:
        return iter(self.models)

    def __len__(self) -> int:
        return len(self.models)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.casefold() in self._index

    def get(self, name: str) -> GpuModelSpec:
        try:
            return self._index[name.casefold()]
        except KeyError:
            known = ", ".join(m.name for m in self.models)
            raise CatalogError(f"Unknown GPU model '{name}'. Known models: {known}.") from None

    def names(self) -> list[str]:
        return [m.name for m in self.models]

    def by_dcgm_model_name(self, model_name: str) -> GpuModelSpec | None:
        """The catalog model a DCGM ``modelName`` label (e.g. ``NVIDIA H100 80GB HBM3``) refers to, if any."""
        wanted = model_name.strip().casefold()
        for model in self.models:
            if any(wanted == known.casefold() for known in model.dcgm_model_names):
                return model
        return None

    def restricted_to(self, names: Iterable[str]) -> Catalog:
        keep = {self.get(n).name for n in names}
        return Catalog(tuple(m for m in self.models if m.name in keep))


def _profiles(rows: Iterable[tuple[str, int, int, tuple[int, ...], bool]]) -> tuple[MigProfile, ...]:
    """Build profiles from ``(name, memory_slices, max_instances, placement_starts, recommendable)`` rows."""
    result = []
    for name, memory_slices, max_instances, starts, recommendable in rows:
        compute, memory = MigProfile.parse_name(name.removesuffix("+me"))
        result.append(
            MigProfile(
                name=name,
                memory_gb=memory,
                compute_slices=compute,
                memory_slices=memory_slices,
                max_instances=max_instances,
                placement_starts=starts,
                recommendable=recommendable,
            )
        )
    return tuple(result)


_SEVEN = (0, 1, 2, 3, 4, 5, 6)
_EVEN4 = (0, 2, 4, 6)


def _gh100_like(one: str, one_wide: str, two: str, three: str, four: str, seven: str) -> tuple[MigProfile, ...]:
    """The 8-memory-slice / 7-compute-slice geometry shared by A100, H100 and H200 (NVIDIA's MIG User Guide)."""
    return _profiles(
        [
            (one, 1, 7, _SEVEN, True),
            (one + "+me", 1, 1, _SEVEN, False),
            (one_wide, 2, 4, _EVEN4, False),
            (two, 2, 3, (0, 2, 4), True),
            (three, 4, 2, (0, 4), True),
            (four, 4, 1, (0,), True),
            (seven, 8, 1, (0,), True),
        ]
    )


# The source shared by the catalog's list prices (docs/reference-sources.md#gpu-catalog).
_AWS = (
    "AWS us-east-1 on-demand Linux instance price / GPUs in the instance (instances.vantage.sh data in "
    'github.com/tsaol/aws-gpu data/all_gpu_instances.js, commit 7412fd2, "Last updated: 2026-01-21"); '
    "includes the host's vCPU and RAM"
)

BUILTIN_CATALOG = Catalog(
    (
        GpuModelSpec(
            name="A100-40GB",
            memory_gb=40,
            product_label="NVIDIA-A100-SXM4-40GB",
            tdp_watts=400,
            family="ampere",
            list_hourly_usd=Decimal("2.7447"),
            mig_compute_slices=7,
            mig_memory_slices=8,
            mig_profiles=_gh100_like("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
            dcgm_model_names=("NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB", "A100-SXM4-40GB"),
            aliases=("A100", "A100-SXM4-40GB"),
            notes="TDP 400 W (SXM4). Cloud price: p4d.24xlarge / 8. No sourced purchase price.",
            price_source="p4d.24xlarge $21.957642/h / 8: " + _AWS,
            dense_fp16_tflops=Decimal("312"),
            throughput_source="NVIDIA A100 datasheet: BF16 Tensor Core 312 TFLOPS dense (624 with sparsity)",
        ),
        GpuModelSpec(
            name="A100-80GB",
            memory_gb=80,
            product_label="NVIDIA-A100-SXM4-80GB",
            tdp_watts=400,
            family="ampere",
            purchase_price_usd=Decimal("11500"),
            list_hourly_usd=Decimal("3.4309"),
            mig_compute_slices=7,
            mig_memory_slices=8,
            mig_profiles=_gh100_like("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
            dcgm_model_names=("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe", "A100-SXM4-80GB"),
            aliases=("A100-SXM4-80GB",),
            notes="Purchase price: midpoint of the $8-15k used-market range (low confidence).",
            price_source="p4de.24xlarge $27.44705/h / 8: " + _AWS,
            dense_fp16_tflops=Decimal("312"),
            throughput_source="NVIDIA A100 datasheet: BF16 Tensor Core 312 TFLOPS dense (624 with sparsity)",
        ),
        GpuModelSpec(
            name="H100-80GB",
            memory_gb=80,
            product_label="NVIDIA-H100-80GB-HBM3",
            tdp_watts=700,
            family="hopper",
            purchase_price_usd=Decimal("27500"),
            list_hourly_usd=Decimal("6.88"),
            mig_compute_slices=7,
            mig_memory_slices=8,
            mig_profiles=_gh100_like("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
            dcgm_model_names=("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "H100-SXM5-80GB"),
            aliases=("H100", "H100-SXM5-80GB"),
            notes="Purchase price: midpoint of $25-30k. Cloud price: p5.48xlarge / 8.",
            price_source="p5.48xlarge $55.04/h / 8 (= p5.4xlarge, 1 x H100, $6.88/h): " + _AWS,
            dense_fp16_tflops=Decimal("989"),
            throughput_source="NVIDIA H100 SXM datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity, half without",
        ),
        GpuModelSpec(
            name="H200",
            memory_gb=141,
            product_label="NVIDIA-H200",
            tdp_watts=700,
            family="hopper",
            purchase_price_usd=Decimal("29500"),
            list_hourly_usd=Decimal("7.912"),
            mig_compute_slices=7,
            mig_memory_slices=8,
            mig_profiles=_gh100_like("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
            dcgm_model_names=("NVIDIA H200", "NVIDIA H200 NVL"),
            aliases=("H200-141GB", "H200-SXM5-141GB"),
            notes="Placements inferred from the GH100 geometry. TDP 700 W (SXM) not verified from a stored source.",
            price_source="p5en.48xlarge $63.296/h / 8: " + _AWS,
            dense_fp16_tflops=Decimal("989"),
            throughput_source=(
                "NVIDIA H200 datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity, half without (same "
                "GH100 compute as H100 SXM)"
            ),
        ),
        GpuModelSpec(
            name="A30",
            memory_gb=24,
            product_label="NVIDIA-A30",
            tdp_watts=165,
            family="ampere",
            mig_compute_slices=4,
            mig_memory_slices=4,
            mig_profiles=_profiles(
                [
                    ("1g.6gb", 1, 4, (0, 1, 2, 3), True),
                    ("1g.6gb+me", 1, 1, (0, 1, 2, 3), False),
                    ("2g.12gb", 2, 2, (0, 2), True),
                    ("2g.12gb+me", 2, 1, (0, 2), False),
                    ("4g.24gb", 4, 1, (0,), True),
                ]
            ),
            dcgm_model_names=("NVIDIA A30",),
            aliases=("A30-24GB",),
            notes="Not sold by AWS: no cloud price; no sourced purchase price. TDP 165 W not verified.",
            price_source=(
                "No sourced list price: AWS does not sell A30 instances and no other sourced price was "
                "found. Load a price book to price A30 pools."
            ),
            dense_fp16_tflops=Decimal("165"),
            throughput_source=(
                "NVIDIA A30 datasheet: BF16 Tensor Core 165 TFLOPS dense (330 with sparsity); not re-read "
                "from a stored copy"
            ),
        ),
        GpuModelSpec(
            name="L4",
            memory_gb=24,
            product_label="NVIDIA-L4",
            tdp_watts=72,
            family="ada",
            list_hourly_usd=Decimal("0.8048"),
            dcgm_model_names=("NVIDIA L4",),
            notes="Not MIG-capable. Cloud price: g6.xlarge.",
            price_source="g6.xlarge (1 x L4) $0.8048/h: " + _AWS,
            dense_fp16_tflops=Decimal("121"),
            throughput_source="NVIDIA L4 datasheet: FP16 Tensor Core 242 TFLOPS with sparsity, half without",
        ),
        GpuModelSpec(
            name="T4",
            memory_gb=16,
            product_label="Tesla-T4",
            tdp_watts=70,
            family="turing",
            list_hourly_usd=Decimal("0.526"),
            dcgm_model_names=("Tesla T4",),
            notes="Not MIG-capable. Cloud price: g4dn.xlarge.",
            price_source="g4dn.xlarge (1 x T4) $0.526/h: " + _AWS,
            dense_fp16_tflops=Decimal("65"),
            throughput_source=(
                "NVIDIA T4 datasheet: mixed-precision (FP16/FP32) Tensor 65 TFLOPS (no sparsity on Turing)"
            ),
        ),
        GpuModelSpec(
            name="V100-32GB",
            memory_gb=32,
            product_label="Tesla-V100-SXM2-32GB",
            tdp_watts=300,
            family="volta",
            dcgm_model_names=("Tesla V100-SXM2-32GB", "Tesla V100-PCIE-32GB"),
            aliases=("V100",),
            list_hourly_usd=Decimal("3.9015"),
            notes="Not in the reference catalog: TDP 300 W (SXM2) from NVIDIA's datasheet; no sourced purchase price.",
            price_source=(
                "p3dn.24xlarge (8 x V100 32GB) $31.212/h / 8: AWS us-east-1 on-demand "
                "(instances.vantage.sh data in github.com/tsaol/aws-gpu data/p3dn_instances.js, commit "
                '299375b, "Last updated: 2026-08-26")'
            ),
            dense_fp16_tflops=Decimal("125"),
            throughput_source="NVIDIA V100 SXM2 datasheet: Tensor performance 125 TFLOPS (mixed precision)",
        ),
    )
)
