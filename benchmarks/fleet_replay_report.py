"""The fleet replay's outcome of one scenario, what is measured at its end, and the side-by-side table."""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from decimal import Decimal

from benchmarks.fleet_replay_plan import START


@dataclass
class Outcome:
    label: str
    held_gpu_hours: Decimal = Decimal(0)
    busy_gpu_hours: float = 0.0
    reclaimed_gpu_hours: float = 0.0
    idle_notebook_gpu_hours: float = 0.0
    waits_h: list[float] = field(default_factory=list)
    never_started: int = 0
    cost_by_team: dict[str, Decimal] = field(default_factory=dict)
    false_reclaims: int = 0
    suspensions: int = 0
    keeps: int = 0
    resumes: int = 0
    seconds: float = 0.0
    gpus: int = 0

    def to_json(self) -> str:
        data = asdict(self)
        data["held_gpu_hours"] = str(self.held_gpu_hours)
        data["cost_by_team"] = {slug: str(amount) for slug, amount in self.cost_by_team.items()}
        return json.dumps(data)

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        data = json.loads(text)
        data["held_gpu_hours"] = Decimal(data["held_gpu_hours"])
        data["cost_by_team"] = {slug: Decimal(amount) for slug, amount in data["cost_by_team"].items()}
        return cls(**data)


def measure(outcome: Outcome, by_id, life_start, end, month_chargeback, rollups, events, requests) -> None:
    from django.db.models import F, FloatField, Sum

    charge = month_chargeback(month=START.date(), now=end, share_idle=False)
    for slug, team in sorted(charge.teams.items()):
        outcome.cost_by_team[slug] = team.amount
        outcome.held_gpu_hours += sum((line.allocated_gpu_hours for line in team.lines), Decimal(0))
    weighted = rollups.objects.aggregate(
        weighted=Sum(F("avg_utilization_pct") * F("sample_count"), output_field=FloatField())
    )["weighted"]
    outcome.busy_gpu_hours = float(weighted or 0) / 6000  # utilization % x minutes -> busy GPU-hours
    # Idle notebook GPU-hours held: complete or not, hours of a running notebook under 5 %.
    idle = rollups.objects.filter(request__workload_type="development", avg_utilization_pct__lt=5).aggregate(
        minutes=Sum("sample_count")
    )["minutes"]
    outcome.idle_notebook_gpu_hours = float(idle or 0) / 60
    # Reclaimed: suspended hours within the request's life (until it would have ended anyway).
    for request_id, item in by_id.items():
        start = life_start.get(request_id)
        if start is None:
            continue
        life_end = min(end, start + timedelta(hours=item.duration_hours))
        suspended_at = None
        for event in events.objects.filter(request_id=request_id).order_by("at", "pk"):
            if event.to_status == "suspended" and event.from_status != "suspended":
                suspended_at = event.at
            elif event.from_status == "suspended" and suspended_at is not None:
                outcome.reclaimed_gpu_hours += item.gpus * max(
                    0.0, (min(event.at, life_end) - suspended_at).total_seconds() / 3600
                )
                suspended_at = None
        if suspended_at is not None:
            outcome.reclaimed_gpu_hours += item.gpus * max(0.0, (life_end - suspended_at).total_seconds() / 3600)
    for request_id, submitted, activated in requests.objects.filter(pk__in=list(by_id)).values_list(
        "pk", "submitted_at", "activated_at"
    ):
        first = life_start.get(request_id) or activated
        if first is None:
            outcome.never_started += 1
        else:
            outcome.waits_h.append(max(0.0, (first - submitted).total_seconds() / 3600))


def p95(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _row(name: str, off: Outcome, on: Outcome, show) -> tuple[str, str, str]:
    return name, show(off), show(on)


def print_table(off: Outcome, on: Outcome, gpus: int, requests: int, days: int) -> None:
    rows = [
        _row("GPU-hours held", off, on, lambda o: f"{o.held_gpu_hours:,.0f}"),
        _row("GPU-hours busy", off, on, lambda o: f"{o.busy_gpu_hours:,.0f}"),
        _row("GPU-hours reclaimed", off, on, lambda o: f"{o.reclaimed_gpu_hours:,.0f}"),
        _row("idle notebook GPU-hours held", off, on, lambda o: f"{o.idle_notebook_gpu_hours:,.0f}"),
        _row("wait to start, median (h)", off, on, lambda o: f"{statistics.median(o.waits_h or [0]):.1f}"),
        _row("wait to start, p95 (h)", off, on, lambda o: f"{p95(o.waits_h):.1f}"),
        _row("requests never started", off, on, lambda o: str(o.never_started)),
        _row("suspensions / keeps / resumes", off, on, lambda o: f"{o.suspensions} / {o.keeps} / {o.resumes}"),
        _row("false reclaims", off, on, lambda o: str(o.false_reclaims)),
    ]
    for slug in sorted(set(off.cost_by_team) | set(on.cost_by_team)):
        rows.append(
            (
                f"cost {slug} (USD)",
                f"{off.cost_by_team.get(slug, Decimal(0)):,.2f}",
                f"{on.cost_by_team.get(slug, Decimal(0)):,.2f}",
            )
        )
    total_off, total_on = sum(off.cost_by_team.values(), Decimal(0)), sum(on.cost_by_team.values(), Decimal(0))
    rows.append(("cost, all teams (USD)", f"{total_off:,.2f}", f"{total_on:,.2f}"))
    rows.append(("replay time (s)", f"{off.seconds:.0f}", f"{on.seconds:.0f}"))
    print(f"\nFleet replay: {gpus} GPUs, {requests} requests, {days} days ({START:%Y-%m}), PostgreSQL")
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'no reclaim':>16}  {'reclaim on':>16}")
    for name, a, b in rows:
        print(f"{name:{width}}  {a:>16}  {b:>16}")
    share = on.reclaimed_gpu_hours / off.idle_notebook_gpu_hours if off.idle_notebook_gpu_hours else 0.0
    verdict = "pass" if share >= 1 / 3 and on.false_reclaims == 0 else "FAIL"
    print(
        f"\nReclaimed {on.reclaimed_gpu_hours:,.0f} of the {off.idle_notebook_gpu_hours:,.0f} idle notebook GPU-hours "
        f"held without reclaim: {share:.0%} (target >= 33 %), false reclaims {on.false_reclaims} (target 0): {verdict}"
    )
