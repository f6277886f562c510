"""The DCGM exporter's data model for synthetic GPUs: label set, help texts and per-device readings. No Django.

Shared by the test exporter (``tests/integration/dcgm_exporter.py``) and the compose demo exporter
(``deploy/dcgm-exporter/exporter.py``), so both speak the label set of NVIDIA's dcgm-exporter
(docs/reference-sources.md#dcgm).
"""

from __future__ import annotations

from dataclasses import dataclass

DRIVER_VERSION = "535.129.03"
NOT_SUPPORTED = 9223372036854775794  # DCGM_INT64_BLANK + 2: "not supported", to be read as missing

HELP = {
    "DCGM_FI_DEV_GPU_UTIL": "GPU utilization (in %).",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "Ratio of time the graphics engine is active.",
    "DCGM_FI_DEV_FB_USED": "Framebuffer memory used (in MiB).",
    "DCGM_FI_DEV_FB_FREE": "Framebuffer memory free (in MiB).",
    "DCGM_FI_DEV_POWER_USAGE": "Power draw (in W).",
    "DCGM_FI_DEV_MEMORY_TEMP": "Memory temperature (in C).",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "Total energy consumption since boot (in mJ).",
    "DCGM_FI_DEV_XID_ERRORS": "Value of the last XID error encountered.",
}


@dataclass(frozen=True)
class FakeDevice:
    """One GPU or MIG instance as the exporter reports it, with its current readings."""

    uuid: str
    gpu: int
    model_name: str = "NVIDIA H100 80GB HBM3"
    host: str = "gpu-node-1"
    host_label: str = "Hostname"  # newer dcgm-exporters spell it "hostname"
    mig_profile: str = ""
    mig_id: str = ""
    namespace: str = ""
    pod: str = ""
    container: str = "main"
    # How Prometheus stored the workload labels in history: "exported" (honor_labels false under a
    # ServiceMonitor, exporter labels renamed) or "plain" (no conflicting target labels).
    spelling: str = "exported"
    util_pct: float = 0.0
    fb_used_mib: float = 0.0
    fb_total_mib: float = 81559.0
    power_w: float = 0.0
    xid: int = 0  # the last XID error code the GPU reported (0: none)
    driver_version: str = DRIVER_VERSION

    @property
    def is_mig(self) -> bool:
        return bool(self.mig_id)

    def labels(self, *, stored: bool = False) -> dict[str, str]:
        """Exporter labels; ``stored`` gives them as Prometheus keeps them after a ServiceMonitor scrape."""
        labels = {
            "gpu": str(self.gpu),
            "UUID": self.uuid,
            "pci_bus_id": f"00000000:{0x1A + self.gpu:02X}:00.0",
            "device": f"nvidia{self.gpu}",
            "modelName": self.model_name,
        }
        if self.is_mig:
            labels |= {"GPU_I_PROFILE": self.mig_profile, "GPU_I_ID": self.mig_id}
        labels[self.host_label] = self.host
        labels["DCGM_FI_DRIVER_VERSION"] = self.driver_version
        if self.pod:
            labels |= {"container": self.container, "namespace": self.namespace, "pod": self.pod}
        if stored:
            labels |= {"job": "dcgm-exporter", "instance": "10.0.0.5:9400"}
            if self.spelling == "exported":
                for name in ("container", "namespace", "pod"):
                    if name in labels:
                        labels[f"exported_{name}"] = labels.pop(name)
                labels |= {"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-x7k2p", "container": "exporter"}
        return labels

    def readings(self) -> dict[str, float]:
        """Metric name -> value, as the device reports them now."""
        values: dict[str, float] = {
            "DCGM_FI_DEV_FB_USED": self.fb_used_mib,
            "DCGM_FI_DEV_FB_FREE": max(0.0, self.fb_total_mib - self.fb_used_mib),
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE": self.util_pct / 100.0,
        }
        if not self.is_mig:
            values |= {
                "DCGM_FI_DEV_GPU_UTIL": self.util_pct,
                "DCGM_FI_DEV_POWER_USAGE": self.power_w,
                "DCGM_FI_DEV_MEMORY_TEMP": float(NOT_SUPPORTED),
                # A device field: reported for the GPU, not for each MIG instance (reference sample-metrics.txt).
                "DCGM_FI_DEV_XID_ERRORS": float(self.xid),
            }
            del values["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]  # whole GPUs here report GPU_UTIL only
        return values
