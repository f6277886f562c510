"""A DCGM-format exporter for tests and demos: live ``/metrics`` with ``prometheus_client``, and history as OpenMetrics.

It speaks the NVIDIA dcgm-exporter label set (shared/reference/dcgm/README.md): ``gpu``, ``UUID``, ``pci_bus_id``,
``device``, ``modelName``, ``GPU_I_PROFILE``/``GPU_I_ID`` on MIG instances, ``Hostname`` or ``hostname``, the
driver version label, then ``container``/``namespace``/``pod`` only while a pod holds the device. MIG instances
report ``DCGM_FI_PROF_GR_ENGINE_ACTIVE`` (0..1) and no ``*_UTIL``, clock or power series, as real ones do.

Run it on its own (the compose demo can): ``python -m tests.integration.dcgm_exporter --port 9400``.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gpucore.dcgm_synthetic import HELP, FakeDevice


class DcgmCollector(Collector):
    """A prometheus_client collector serving the devices' current readings in the DCGM format."""

    def __init__(self, devices: Iterable[FakeDevice]) -> None:
        self.devices = list(devices)
        self.started = time.monotonic()

    def collect(self) -> Iterator[Metric]:
        families: dict[str, GaugeMetricFamily] = {}
        for device in self.devices:
            labels = device.labels()
            for name, value in device.readings().items():
                family = families.setdefault(name, GaugeMetricFamily(name, HELP[name]))
                # Label sets differ per device (MIG, pod labels): samples carry their own labels.
                family.add_sample(name, labels, value)
        yield from families.values()
        # "untyped": prometheus_client would rename a counter family to *_total; DCGM keeps the bare name.
        energy = Metric("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", HELP["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"], "unknown")
        elapsed = time.monotonic() - self.started
        for device in self.devices:
            if not device.is_mig:
                energy.add_sample(
                    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", device.labels(), 4.3e9 + device.power_w * elapsed * 1000
                )
        yield energy


class DcgmExporter:
    """Serves a DcgmCollector on a loopback port (0: a free one) in a daemon thread."""

    def __init__(self, devices: Iterable[FakeDevice]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.collector = DcgmCollector(devices)
        self.registry.register(self.collector)
        self._server = None
        self._thread = None

    def start(self, port: int = 0, addr: str = "127.0.0.1") -> int:
        """Start serving ``/metrics``; returns the port."""
        self._server, self._thread = start_http_server(port, addr=addr, registry=self.registry)
        return int(self._server.server_port)

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def set_devices(self, devices: Iterable[FakeDevice]) -> None:
        """Replace what the next scrape reports (a pod arriving or leaving)."""
        self.collector.devices = list(devices)


def _format_labels(labels: dict[str, str]) -> str:
    body = ",".join(
        f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for k, v in labels.items()
    )
    return "{" + body + "}"


Readings = Callable[[FakeDevice, datetime], dict[str, float]]


def write_openmetrics_history(
    devices: Iterable[FakeDevice],
    *,
    start: datetime,
    end: datetime,
    out_dir: Path,
    step: timedelta = timedelta(seconds=60),
    readings: Readings | None = None,
) -> list[Path]:
    """Write [start, end) of the devices' readings as stored series, one OpenMetrics file per UTC day.

    One file per day keeps ``promtool tsdb create-blocks-from openmetrics`` fast. ``readings`` may
    override a device's values at a time (sentinels, changes); by default the device's own readings are used.
    """
    devices = list(devices)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    day = start.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    while day < end:
        day_start, day_end = max(day, start), min(day + timedelta(days=1), end)
        times = []
        t = day_start
        while t < day_end:
            times.append(t)
            t += step
        by_metric: dict[str, list[str]] = {}
        for device in devices:
            labels = _format_labels(device.labels(stored=True))
            series: dict[str, list[str]] = {}
            for t in times:
                values = readings(device, t) if readings else device.readings()
                for name, value in values.items():
                    series.setdefault(name, []).append(f"{name}{labels} {value:g} {int(t.timestamp())}")
            for name, lines in series.items():
                by_metric.setdefault(name, []).extend(lines)
        path = out_dir / f"history-{day:%Y-%m-%d}.om"
        with path.open("w") as handle:
            # OpenMetrics: one block per family, each series in time order, and a closing # EOF.
            for name, lines in by_metric.items():
                handle.write(f"# HELP {name} {HELP[name]}\n# TYPE {name} gauge\n")
                handle.write("\n".join(lines) + "\n")
            handle.write("# EOF\n")
        files.append(path)
        day += timedelta(days=1)
    return files


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def backfill(files: Iterable[Path], data_dir: Path, *, timeout: float = 300) -> None:
    """Turn OpenMetrics files into TSDB blocks in ``data_dir`` with promtool, one call per file (per UTC day)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for path in files:
        subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(path), str(data_dir)],
            check=True,
            capture_output=True,
            timeout=timeout,
        )


class PrometheusServer:
    """The real ``prometheus`` binary on a free loopback port, with a temp config and data dir (3650 d retention)."""

    def __init__(
        self,
        *,
        scrape_targets: Iterable[str] = (),
        target_labels: dict[str, str] | None = None,
        data_dir: Path | None = None,
        scrape_interval: str = "1s",
        extra_args: Iterable[str] = (),
    ) -> None:
        self.extra_args = list(extra_args)  # more command-line flags, e.g. --query.timeout=30m
        self.root = Path(tempfile.mkdtemp(prefix="prom-test-"))
        self.data_dir = data_dir or self.root / "data"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        targets = list(scrape_targets)
        # honor_labels false with target labels named namespace/pod, as a ServiceMonitor has: Prometheus renames
        # the exporter's own namespace/pod to exported_namespace/exported_pod
        # (docs/reference-sources.md, "DCGM").
        labels = target_labels if target_labels is not None else {"namespace": "gpu-operator", "pod": "dcgm-exporter-0"}
        config = f"global:\n  scrape_interval: {scrape_interval}\n  evaluation_interval: {scrape_interval}\n"
        if targets:
            label_yaml = ", ".join(f'{k}: "{v}"' for k, v in labels.items())
            config += (
                "scrape_configs:\n  - job_name: dcgm-exporter\n    honor_labels: false\n    static_configs:\n"
                f"      - targets: [{', '.join(repr(t) for t in targets)}]\n        labels: {{{label_yaml}}}\n"
            )
        self.config = self.root / "prometheus.yml"
        self.config.write_text(config)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *, timeout: float = 30) -> None:
        """Start the server and wait (bounded) until it answers ready."""
        self.log = (self.root / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [
                shutil.which("prometheus") or "prometheus",
                f"--config.file={self.config}",
                f"--storage.tsdb.path={self.data_dir}",
                # Without it Prometheus deletes backfilled blocks older than the default 15 days.
                "--storage.tsdb.retention.time=3650d",
                f"--web.listen-address=127.0.0.1:{self.port}",
                *self.extra_args,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.root / 'prometheus.log').read_text()[-2000:]}")
            try:
                if requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"prometheus not ready in {timeout} s")

    def stop(self) -> None:
        """Stop the server (terminate, then kill after 10 s)."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        if getattr(self, "log", None):
            self.log.close()

    def cleanup(self) -> None:
        """Stop and delete the temp directory."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def prometheus_with_history(
    devices: Iterable[FakeDevice],
    *,
    start: datetime,
    end: datetime,
    out_dir: Path,
    readings: Readings | None = None,
    scrape_targets: Iterable[str] = (),
) -> Iterator[tuple[PrometheusServer, list[Path]]]:
    """A started PrometheusServer holding [start, end) of the devices' history (backfilled), and the history files.

    The server is stopped and its temp directory deleted on exit.
    """
    server = PrometheusServer(scrape_targets=scrape_targets)
    try:
        files = write_openmetrics_history(devices, start=start, end=end, out_dir=out_dir, readings=readings)
        backfill(files, server.data_dir)
        server.start()
        yield server, files
    finally:
        server.cleanup()


def demo_devices() -> list[FakeDevice]:
    """A node with two whole H100s and an A100 split into MIG instances, some held by team pods."""
    a100 = FakeDevice(
        uuid="GPU-3bc239e1-4cc8-97e4-e817-5a36dfd2885e", gpu=2, model_name="NVIDIA A100-SXM4-40GB", fb_total_mib=4864
    )
    return [
        FakeDevice(
            uuid="GPU-58e8f5ea-13cc-013a-d88f-2bcf5ae8bc77",
            gpu=0,
            namespace="team-vision",
            pod="gpr-1-abcde",
            util_pct=85,
            fb_used_mib=61250,
            power_w=512,
        ),
        FakeDevice(uuid="GPU-00000000-0000-0000-0000-00000000a001", gpu=1, util_pct=0, power_w=61),
        replace(
            a100, mig_profile="1g.5gb", mig_id="7", namespace="team-nlp", pod="gpr-2-x", util_pct=40, fb_used_mib=3000
        ),
        replace(a100, mig_profile="1g.5gb", mig_id="8"),
    ]


def main() -> None:
    """Serve the demo devices until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=9400)
    parser.add_argument("--addr", default="0.0.0.0")  # noqa: S104 - a demo container listens on its interface
    args = parser.parse_args()
    exporter = DcgmExporter(demo_devices())
    print(f"DCGM demo exporter on http://{args.addr}:{exporter.start(args.port, args.addr)}/metrics")
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        exporter.stop()


if __name__ == "__main__":
    main()
