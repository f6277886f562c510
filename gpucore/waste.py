"""Waste on the bill: per request, the GPU-hours held against those busy, and what the idle part cost. Pure.

Busy GPU-hours are the held GPU-hours times the measured average utilization (DCGM's ``GPU_UTIL``, from the hourly
rollups): a GPU held for 10 hours at 20 % was busy for 2 of them and idle for 8, and the idle part cost 80 % of the
charge. A line without a measurement (no rollup, imported usage) is neither busy nor idle: it is left out of both,
never counted as waste.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal

ZERO = Decimal(0)
HUNDRED = Decimal(100)


@dataclass(frozen=True, slots=True)
class ChargedHours:
    """One charge line: what it held, its measured average utilization (None: not measured), what it cost."""

    request: int | None
    name: str
    held_gpu_hours: Decimal
    avg_utilization_pct: float | None
    amount: Decimal


@dataclass(frozen=True, slots=True)
class Waste:
    """Held, busy and idle GPU-hours and the cost of the idle hours, of one request or a total."""

    request: int | None
    name: str
    held_gpu_hours: Decimal = ZERO
    measured_gpu_hours: Decimal = ZERO
    busy_gpu_hours: Decimal = ZERO
    amount: Decimal = ZERO
    idle_cost: Decimal = ZERO

    @property
    def idle_gpu_hours(self) -> Decimal:
        """Measured hours that were not busy."""
        return self.measured_gpu_hours - self.busy_gpu_hours

    @property
    def busy_pct(self) -> float | None:
        """Busy share of the measured hours, in percent; None when nothing was measured."""
        if not self.measured_gpu_hours:
            return None
        return float(self.busy_gpu_hours / self.measured_gpu_hours * HUNDRED)

    def plus(self, line: ChargedHours) -> Waste:
        """This waste with one more charge line."""
        measured, busy, idle_cost = ZERO, ZERO, ZERO
        if line.avg_utilization_pct is not None:
            busy_share = min(Decimal(str(line.avg_utilization_pct)), HUNDRED) / HUNDRED
            measured = line.held_gpu_hours
            busy = line.held_gpu_hours * busy_share
            idle_cost = line.amount * (1 - busy_share)
        return Waste(
            request=self.request,
            name=self.name,
            held_gpu_hours=self.held_gpu_hours + line.held_gpu_hours,
            measured_gpu_hours=self.measured_gpu_hours + measured,
            busy_gpu_hours=self.busy_gpu_hours + busy,
            amount=self.amount + line.amount,
            idle_cost=self.idle_cost + idle_cost,
        )


def waste_by_request(lines: Iterable[ChargedHours]) -> tuple[list[Waste], Waste]:
    """Each request's waste (its lines summed: one per price book in effect), most idle cost first, and the total."""
    by_request: dict[tuple[int | None, str], Waste] = {}
    total = Waste(request=None, name="Total")
    for line in lines:
        key = (line.request, line.name if line.request is None else "")
        current = by_request.get(key) or Waste(request=line.request, name=line.name)
        by_request[key] = current.plus(line)
        total = total.plus(line)
    rows = sorted(by_request.values(), key=lambda waste: (-waste.idle_cost, waste.request or 0, waste.name))
    return rows, total
