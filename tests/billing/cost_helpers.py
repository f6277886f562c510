"""Builders for the cost tests: a price book, requests that held GPUs during a period, rollups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib.auth.models import Group, Permission

from allocations.models import GpuModel, GpuRequest, RequestStatus, SlaTier
from billing.costs.services import price_book_load
from billing.costs.visibility import FINANCE_GROUP, FINANCE_PERMISSIONS
from billing.metering.aggregates import refresh_usage_aggregates
from billing.models import PriceBook, UtilizationRollup
from tests.factories import GpuRequestFactory, UserFactory

OCT = datetime(2026, 10, 1, tzinfo=UTC)


def load_book(rates: dict[str, str], effective_from: str = "2026-10-01", **multipliers: str) -> PriceBook:
    models = "\n".join(f'  {name}: {{hourly: "{rate}"}}' for name, rate in rates.items())
    tiers = ", ".join(f'{k}: "{v}"' for k, v in multipliers.items())
    text = f"currency: USD\neffective_from: {effective_from}\ngpu_models:\n{models}\n"
    if tiers:
        text += f"sla_multipliers: {{{tiers}}}\n"
    return price_book_load(text=text)[0]


def held_request(
    *,
    team,
    start: datetime,
    end: datetime | None,
    gpu_model: str = "H100-80GB",
    strategy: str = "dedicated",
    resource_name: str = "nvidia.com/gpu",
    quantity: int = 1,
    replicas: int = 1,
    tier: str = "tier2_batch",
    mig_profile: str | None = None,
    time_slice_replicas: int | None = None,
    node_pool=None,
) -> GpuRequest:
    spec = {
        "strategy": strategy,
        "resource_name": resource_name,
        "quantity": quantity,
        "replicas": replicas,
        "gpu_model": gpu_model,
        "mig_profile": mig_profile,
        "time_slice_replicas": time_slice_replicas,
        "node_selector": {"nvidia.com/gpu.product": GpuModel.objects.get(name=gpu_model).product_label},
    }
    return GpuRequestFactory(
        team=team,
        spec=spec,
        resource_name=resource_name,
        resource_units=quantity * replicas,
        status=RequestStatus.ACTIVE if end is None else RequestStatus.RELEASED,
        activated_at=start,
        ended_at=end,
        sla_tier=SlaTier.objects.get(slug=tier),
        node_pool=node_pool,
    )


def finance_user(username: str = "finance"):
    group, _ = Group.objects.get_or_create(name=FINANCE_GROUP)
    for permission in FINANCE_PERMISSIONS:
        app_label, codename = permission.split(".")
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    user = UserFactory(username=username)
    user.groups.add(group)
    return user


def rollup(*, cluster, hour: datetime, request: GpuRequest | None, util: float, gpu: str = "GPU-1", **kw) -> None:
    UtilizationRollup.objects.create(
        cluster=cluster,
        hour=hour,
        gpu_uuid=gpu,
        namespace=request.team.namespace if request else "",
        pod=f"gpr-{request.pk}" if request else "",
        team=request.team if request else None,
        request=request,
        gpu_model_name=kw.pop("model_name", "NVIDIA H100 80GB HBM3"),
        sample_count=60,
        avg_utilization_pct=util,
        peak_utilization_pct=util,
        energy_kwh=kw.pop("energy", 0.35),
        pulled_at=hour,
        **kw,
    )
    # As every writer of rollups does (the ingest, the demo): the daily and monthly totals follow.
    refresh_usage_aggregates(cluster_id=cluster.pk, start=hour, end=hour + timedelta(hours=1))
