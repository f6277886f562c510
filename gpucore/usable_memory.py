"""The GPU memory a workload can really use on a GPU or MIG slice, and the headroom it must keep. Pure: no Django.

A profile's name (``3g.20gb``) and a GPU's marketed size are in decimal GB and round up; what a process can allocate
is smaller and in GiB: ``nvidia-smi`` shows 19.62 GiB for an A100-40GB ``3g.20gb`` and 15360 MiB (15 GiB) for a T4.
The portal fits a replica's peak memory (GiB) against that usable memory with the same 85 % line the
memory-pressure alert draws (``gpucore.alerts.MEMORY_PRESSURE_RATIO``), so a fitted workload does not start under
that alert. Sources: docs/reference-sources.md, "Usable GPU memory".
"""

from __future__ import annotations

from decimal import ROUND_UP, Decimal

from gpucore.alerts import MEMORY_PRESSURE_RATIO
from gpucore.catalog import GpuModelSpec, MigProfile

HEADROOM_RATIO = Decimal(str(MEMORY_PRESSURE_RATIO))
# Where no reading is known: the smallest measured share of the marketed size (A100-40GB 1g.5gb, 4.75 GiB of
# "5 gb"), so a guess never promises more than a measured part gives.
_UNMEASURED_RATIO = Decimal("0.95")

_A100_40 = {"1g.5gb": "4.75", "1g.5gb+me": "4.75", "1g.10gb": "9.75", "2g.10gb": "9.75", "3g.20gb": "19.62"}
_A100_40 |= {"4g.20gb": "19.62", "7g.40gb": "39.5"}
# H100-80GB as read; A100-80GB has the same 8 x 10 GB memory slices (inferred from the same geometry).
_GH100_80 = {"1g.10gb": "9.75", "1g.10gb+me": "9.75", "1g.20gb": "19.62", "2g.20gb": "19.62", "3g.40gb": "39.5"}
_GH100_80 |= {"4g.40gb": "39.5", "7g.80gb": "79.25"}
_A30 = {"1g.6gb": "5.81", "1g.6gb+me": "5.81", "2g.12gb": "11.69", "2g.12gb+me": "11.69", "4g.24gb": "23.5"}

# (model name, MIG profile) -> GiB from ``nvidia-smi mig -lgip`` (shared/reference/mig_profiles.yaml).
_MIG_GIB: dict[tuple[str, str], Decimal] = {
    (model, profile): Decimal(gib)
    for model, table in (("a100-40gb", _A100_40), ("a100-80gb", _GH100_80), ("h100-80gb", _GH100_80), ("a30", _A30))
    for profile, gib in table.items()
}
# model name -> GiB of a whole GPU without MIG: nvidia-smi's memory total where read (T4 15360 MiB, L4 23034 MiB,
# H200 143771 MiB), else the full MIG profile's reading (the smaller of the two).
_WHOLE_GIB: dict[str, Decimal] = {
    "t4": Decimal("15"),
    "l4": Decimal("22.49"),
    "h200": Decimal("140.4"),
    "a100-40gb": Decimal("39.5"),
    "a100-80gb": Decimal("79.25"),
    "h100-80gb": Decimal("79.25"),
    "a30": Decimal("23.5"),
}


def usable_gib(model: GpuModelSpec, mig: MigProfile | None = None) -> Decimal:
    """The GiB a process can allocate on one GPU of ``model`` (or on one ``mig`` slice of it)."""
    for name in model.folded_names:
        measured = _MIG_GIB.get((name, mig.name)) if mig is not None else _WHOLE_GIB.get(name)
        if measured is not None:
            return measured
    marketed = mig.memory_gb if mig is not None else model.memory_gb
    return (Decimal(marketed) * _UNMEASURED_RATIO).quantize(Decimal("0.01"))


def with_headroom(need_gib: Decimal) -> Decimal:
    """The usable GiB a peak of ``need_gib`` needs so that it stays at or under the 85 % pressure line."""
    return (Decimal(need_gib) / HEADROOM_RATIO).quantize(Decimal("0.01"), ROUND_UP)


def holds(usable: Decimal, need_gib: Decimal) -> bool:
    """True when ``need_gib`` stays at or under 85 % of ``usable`` (multiplied, so boundaries are exact)."""
    return Decimal(need_gib) <= usable * HEADROOM_RATIO
