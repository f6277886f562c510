"""The small prose helpers every sentence of the decision framework shares: memory in GiB, percentages, money, and
what a replica needs. Pure: no Django.

Their own module because the rules, the sizing of options and the explanations all word numbers the same way, and
none of those should depend on another just to format one.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from gpucore import formatting
from gpucore.profile import WorkloadProfile


def need_text(profile: WorkloadProfile) -> str:
    if profile.gpu_count == 1:
        return f"A replica needs {format_gb(profile.gpu_memory_gb)} on one GPU"
    per_gpu = format_gb(profile.gpu_memory_gb / profile.gpu_count)
    return f"A replica needs {format_gb(profile.gpu_memory_gb)} over {profile.gpu_count} GPUs ({per_gpu} per GPU)"


def format_gb(value: Decimal | int) -> str:
    """GPU memory in prose: ``gpu_memory_gb`` and usable memory are both GiB."""
    return f"{format_number(value)} GiB"


def format_number(value: Decimal | int) -> str:
    return _plain(Decimal(value))


def format_pct(value: Decimal) -> str:
    return f"{value.quantize(Decimal('0.1'), ROUND_HALF_UP)}%"


def format_money(amount: Decimal, currency: str) -> str:
    """Money in prose, in the portal's one format (``gpucore.formatting``): ``5,022.40 USD``."""
    return formatting.format_money(amount, currency)


def _plain(value: Decimal) -> str:
    """A number for prose: at most two decimals, no trailing zeros, no exponent (13.33, 10, 5.01)."""
    rounded = value.quantize(Decimal("0.01"), ROUND_HALF_UP).normalize()
    return f"{rounded:f}"
