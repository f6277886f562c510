"""The PromQL of the utilization and GPU health pulls, and the recording rules that make them cheap at fleet size. Pure.

The pull needs, per device, owner and minute, whether the device was measured at that minute and what it read. A
minute counts only where a real sample is under ``max_age`` seconds old (``fresh``): an instant selector carries a
series' last sample forward for the lookback delta (5 min), so after a scrape gap a subquery would count minutes
nobody measured. Two ways to get those minutes:

- **subqueries** (``subquery_pull_queries``): ``count_over_time((<measured>)[1h:1m])`` and friends, evaluated by
  the pull for every hour read. Works on any Prometheus, but each query matches every device's series at every
  minute (``and``/``or`` vector matching), which at 10,000 GPUs costs Prometheus minutes of CPU per hour read.
- **recording rules** (``recording_rule_group``): Prometheus evaluates the same per-minute expressions once a
  minute as they arrive and stores them (``RECORDED``); the pull then reads them with plain range functions
  (``recorded_pull_queries``), which read stored samples and match nothing.

Both give, per hour, the minutes measured (``samples``), the minutes scraped at all, DCGM blanks included
(``covered``: whether the hour is complete), and the averages, peaks and energy. The GPU health pulls (XID census,
hottest minute, memory-pressure minutes) read their minutes the same two ways (``health_pull_queries``,
``health_rule_group``). A ``max by`` over the identity and
workload labels drops duplicate series (two scrape jobs, a container or driver label change) without summing them.
"""

from __future__ import annotations

from typing import Any

from gpucore.alerts import MEMORY_PRESSURE_RATIO
from gpucore.attribution import GAUGE_BLANK_FLOOR, GPU_UTIL, GR_ENGINE_ACTIVE

# Identity and workload labels a rollup depends on; both spellings of each (docs/reference-sources.md#dcgm).
BY = (
    "UUID, gpu, modelName, Hostname, hostname, GPU_I_ID, GPU_I_PROFILE, "
    "namespace, pod, exported_namespace, exported_pod"
)
FLOOR = f"{GAUGE_BLANK_FLOOR:.0f}"
# Whole GPUs report DCGM_FI_DEV_GPU_UTIL (%); MIG instances only DCGM_FI_PROF_GR_ENGINE_ACTIVE (0..1), so x100.
# `or` matches on every label but the name, so a device reporting both keeps GPU_UTIL.
UTIL_EXPR = f"(DCGM_FI_DEV_GPU_UTIL < {FLOOR}) or ((DCGM_FI_PROF_GR_ENGINE_ACTIVE < {FLOOR}) * 100)"
MEMORY_EXPR = f"DCGM_FI_DEV_FB_USED < {FLOOR}"
POWER_EXPR = f"DCGM_FI_DEV_POWER_USAGE < {FLOOR}"
DEFAULT_MAX_AGE_SECONDS = 60

RULE_GROUP_NAME = "gpu_portal_utilization"
HEALTH_RULE_GROUP_NAME = "gpu_portal_health"
RULE_GROUP_INTERVAL = "1m"
# The recorded per-minute series (level:metric:operations, as Prometheus names recording rules).
RECORDED = {
    "util": "gpu_portal:gpu_utilization_pct:measured_1m",
    "memory": "gpu_portal:gpu_memory_used_mib:measured_1m",
    "power": "gpu_portal:gpu_power_watts:measured_1m",
    "scraped": "gpu_portal:gpu_sample_age_seconds:scraped_1m",
}
# The GPU health pulls' minute series: the XID gauge (the census of GPUs and driver versions), the temperature, and
# the minutes of memory pressure.
HEALTH_RECORDED = {
    "xid": "gpu_portal:gpu_xid_errors:1m",
    "temp": "gpu_portal:gpu_temperature_c:1m",
    "pressure": "gpu_portal:gpu_memory_pressure:1m",
}
# The GPU, not the MIG instance or the pod: an XID is the device's, and a driver the node's.
GPU_BY = "UUID, gpu, modelName, Hostname, hostname"
XID_EXPR = f"DCGM_FI_DEV_XID_ERRORS < {FLOOR}"
TEMP_EXPR = f"DCGM_FI_DEV_GPU_TEMP < {FLOOR}"


def fresh(*metrics: str, max_age: int) -> str:
    """The age in seconds of the newest real sample of ``metrics``, where it is under ``max_age`` seconds.

    ``timestamp()`` of a selector is the sample's own time, so ``time() - timestamp()`` is its age at each minute.
    """
    return " or ".join(f"(time() - timestamp({metric}) < {max_age})" for metric in metrics)


def measured(expr: str, *metrics: str, max_age: int) -> str:
    """``expr`` where the newest real sample of ``metrics`` is under ``max_age`` seconds old."""
    # `and` matches on every label but the name: the device and owner of the same series.
    return f"(({expr}) and ({fresh(*metrics, max_age=max_age)}))"


def minute_expressions(max_age: int = DEFAULT_MAX_AGE_SECONDS) -> dict[str, str]:
    """Per device and owner at one instant: utilization, memory and power where measured, and the sample age where
    the device was scraped at all (DCGM blanks included). Keys as ``RECORDED``."""
    return {
        "util": measured(UTIL_EXPR, GPU_UTIL, GR_ENGINE_ACTIVE, max_age=max_age),
        "memory": measured(MEMORY_EXPR, "DCGM_FI_DEV_FB_USED", max_age=max_age),
        "power": measured(POWER_EXPR, "DCGM_FI_DEV_POWER_USAGE", max_age=max_age),
        "scraped": f"({fresh(GPU_UTIL, GR_ENGINE_ACTIVE, max_age=max_age)})",
    }


def _pull_queries(over: dict[str, str]) -> dict[str, str]:
    """The pull's queries given each minute series as a range vector over the hour."""
    return {
        "samples": f"max by ({BY}) (count_over_time({over['util']}))",
        # Minutes the device was scraped at all, DCGM blanks included: what says whether the hour is covered.
        "covered": f"max by ({BY}) (count_over_time({over['scraped']}))",
        "util_avg": f"max by ({BY}) (avg_over_time({over['util']}))",
        "util_max": f"max by ({BY}) (max_over_time({over['util']}))",
        "mem_avg": f"max by ({BY}) (avg_over_time({over['memory']}))",
        "mem_max": f"max by ({BY}) (max_over_time({over['memory']}))",
        # Watts at each minute x 1/60 h, summed: watt-hours; / 1000: kWh.
        "energy_kwh": f"max by ({BY}) (sum_over_time({over['power']})) / 60000",
    }


def subquery_pull_queries(max_age: int = DEFAULT_MAX_AGE_SECONDS) -> dict[str, str]:
    """The pull's queries on a Prometheus without the recording rules: one-minute subqueries over the hour."""
    return _pull_queries({key: f"{expr}[1h:1m]" for key, expr in minute_expressions(max_age).items()})


def recorded_pull_queries() -> dict[str, str]:
    """The pull's queries on a Prometheus that evaluates ``recording_rule_group``: the recorded minutes of the hour."""
    return _pull_queries({key: f"{name}[1h]" for key, name in RECORDED.items()})


def recording_rule_group(max_age: int = DEFAULT_MAX_AGE_SECONDS) -> dict[str, Any]:
    """The rule group (Prometheus rule-file and PrometheusRule form alike) that records the pull's minute series.

    Evaluated every minute, so an hour holds 60 evaluations: the same grid the subqueries use, shifted by the
    group's evaluation offset. ``max_age`` must match the portal's ``BILLING_SCRAPE_MAX_AGE_SECONDS``.
    """
    expressions = minute_expressions(max_age)
    return {
        "name": RULE_GROUP_NAME,
        "interval": RULE_GROUP_INTERVAL,
        "rules": [{"record": RECORDED[key], "expr": expressions[key]} for key in RECORDED],
    }


# Guide 3.3: FB_USED / FB_TOTAL > 0.85 for 2m; dcgm-exporter's default counters carry FB_USED and FB_FREE.
def _fb_ratio(offset: str = "") -> str:
    # offset binds to each selector (PromQL allows it on selectors and subqueries only).
    used, free = f"(DCGM_FI_DEV_FB_USED{offset} < {FLOOR})", f"(DCGM_FI_DEV_FB_FREE{offset} < {FLOOR})"
    return f"({used} / ({used} + {free}))"


def health_minute_expressions(pressure_ratio: float = MEMORY_PRESSURE_RATIO) -> dict[str, str]:
    """Per device at one instant: the XID gauge, the temperature, and whether memory use has been above
    ``pressure_ratio`` for 2 minutes (there, 1 and 2 minutes before; ``gpucore.alerts``). Keys as ``HEALTH_RECORDED``.

    No freshness test, unlike the utilization minutes: what they feed (a census, a peak, alert minutes) reads the
    last sample as the dashboards do."""
    pressed = " and ".join(f"{_fb_ratio(offset)} > {pressure_ratio:g}" for offset in ("", " offset 1m", " offset 2m"))
    return {"xid": XID_EXPR, "temp": TEMP_EXPR, "pressure": f"({pressed})"}


def health_pull_queries(*, recorded: bool) -> dict[str, str]:
    """Per hour: the minutes each GPU (and driver version) reported the XID gauge, each device and owner's hottest
    minute and minutes of memory pressure; from the recorded minutes or by one-minute subqueries."""
    if recorded:
        over = {key: f"{name}[1h]" for key, name in HEALTH_RECORDED.items()}
    else:
        over = {key: f"({expr})[1h:1m]" for key, expr in health_minute_expressions().items()}
    return {
        "devices": f"max by ({GPU_BY}, DCGM_FI_DRIVER_VERSION) (count_over_time({over['xid']}))",
        "temp_max": f"max by ({BY}) (max_over_time({over['temp']}))",
        "pressure_minutes": f"max by ({BY}) (count_over_time({over['pressure']}))",
    }


def health_rule_group() -> dict[str, Any]:
    """The rule group that records the GPU health pulls' minute series, every minute."""
    expressions = health_minute_expressions()
    return {
        "name": HEALTH_RULE_GROUP_NAME,
        "interval": RULE_GROUP_INTERVAL,
        "rules": [{"record": HEALTH_RECORDED[key], "expr": expressions[key]} for key in HEALTH_RECORDED],
    }


def rule_groups(max_age: int = DEFAULT_MAX_AGE_SECONDS) -> list[dict[str, Any]]:
    """Every rule group the portal's pulls can read: the rule file's ``groups``."""
    return [recording_rule_group(max_age), health_rule_group()]
