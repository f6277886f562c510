"""A DCGM-format exporter for the compose demo: the demo cluster's devices and pods, live, on ``:9400/metrics``.

Devices and owners come from the portal database (``billing.metering.demo_usage.demo_devices``: active requests on their
pools, an outside team workload, unallocated devices), refreshed every minute; readings follow the same workload
patterns as the demo history, with the DCGM label set of ``gpucore.dcgm_synthetic.FakeDevice`` and
``DCGM_FI_DEV_GPU_TEMP`` added for the temperature alert. Run it with the app image:
``python deploy/dcgm-exporter/exporter.py --port 9400 --cluster demo``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings.base")

import django

django.setup()

from prometheus_client import CollectorRegistry, start_http_server  # noqa: E402
from prometheus_client.core import GaugeMetricFamily, Metric  # noqa: E402
from prometheus_client.registry import Collector  # noqa: E402

from allocations.models import GpuRequest, NodePool, RequestStatus, Team  # noqa: E402
from billing.metering.demo_usage import DemoDevice, demo_devices, demo_level  # noqa: E402
from gpucore.dcgm_synthetic import HELP, FakeDevice  # noqa: E402

HELP_TEMP = "GPU temperature (in C)."


def current_devices(cluster: str) -> list[DemoDevice]:
    """The cluster's simulated devices and who holds them now."""
    pools = NodePool.objects.filter(cluster__name=cluster, cluster__is_active=True).select_related("gpu_model")
    active = list(GpuRequest.objects.filter(status=RequestStatus.ACTIVE, node_pool__in=pools).select_related("team"))
    outside_team = Team.objects.exclude(pk__in=[r.team_id for r in active]).order_by("slug").first()
    outside = (outside_team, "jupyter-shared-0") if outside_team else None
    return [d for pool in pools for d in demo_devices(pool, [r for r in active if r.node_pool_id == pool.pk], outside)]


def fake(device: DemoDevice, now: datetime) -> tuple[FakeDevice, float]:
    """The device as the test exporter describes it, with readings for now, and its temperature."""
    rng = random.Random(f"{device.uuid}/{device.mig_instance}|{now:%Y-%m-%dT%H:%M}")
    util, memory = demo_level(device.pattern, now, rng)
    util = max(0.0, min(100.0, util + rng.gauss(0, 3) if util else 0.0))
    used = max(0.0, min(0.99, memory + rng.gauss(0, 0.03) if memory else 0.0)) * device.memory_mib
    hot = 9 if device.pattern == "training" and 13 <= now.hour <= 15 else 0
    return (
        FakeDevice(
            uuid=device.uuid,
            gpu=device.gpu_index,
            model_name=device.model_name,
            host=device.hostname,
            mig_profile=device.mig_profile,
            mig_id=device.mig_instance,
            namespace=device.namespace,
            pod=device.pod,
            util_pct=round(util, 1),
            fb_used_mib=round(used),
            fb_total_mib=device.memory_mib,
            power_w=round(device.tdp_watts * (0.12 + 0.88 * util / 100), 1),
        ),
        round(33 + 0.5 * util + rng.gauss(0, 1.5) + hot, 1),
    )


class DemoCollector(Collector):
    """Serves the demo devices' readings in the DCGM format, re-reading owners from the database each minute."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.devices: list[DemoDevice] = []
        self.read_at = 0.0

    def collect(self) -> Iterator[Metric]:
        if time.monotonic() - self.read_at > 60:
            self.devices, self.read_at = current_devices(self.cluster), time.monotonic()
        now = datetime.now(UTC)
        families: dict[str, GaugeMetricFamily] = {}
        for device in self.devices:
            exported, temperature = fake(device, now)
            readings = exported.readings()
            if not exported.is_mig:
                readings["DCGM_FI_DEV_GPU_TEMP"] = temperature
            readings.pop("DCGM_FI_DEV_MEMORY_TEMP", None)
            for name, value in readings.items():
                family = families.setdefault(name, GaugeMetricFamily(name, HELP.get(name, HELP_TEMP)))
                family.add_sample(name, exported.labels(), value)
        yield from families.values()


def main() -> None:
    """Serve the demo cluster's devices until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=9400)
    parser.add_argument("--addr", default="0.0.0.0")  # noqa: S104 - a compose service listens on its interface
    parser.add_argument("--cluster", default="demo")
    args = parser.parse_args()
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DemoCollector(args.cluster))
    start_http_server(args.port, addr=args.addr, registry=registry)
    print(f"DCGM demo exporter for cluster {args.cluster} on http://{args.addr}:{args.port}/metrics", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
