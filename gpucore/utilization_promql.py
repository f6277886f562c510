"""The PromQL of the utilization pull, and the recording rules that make it cheap at fleet size. Pure.

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
(``covered``: whether the hour is complete), and the averages, peaks and energy. A ``max by`` over the identity and
workload labels drops duplicate series (two scrape jobs, a container or driver label change) without summing them.
"""

from __future__ import annotations

from typing import Any

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
RULE_GROUP_INTERVAL = "1m"
# The recorded per-minute series (level:metric:operations, as Prometheus names recording rules).
RECORDED = {
    "util": "gpu_portal:gpu_utilization_pct:measured_1m",
    "memory": "gpu_portal:gpu_memory_used_mib:measured_1m",
    "power": "gpu_portal:gpu_power_watts:measured_1m",
    "scraped": "gpu_portal:gpu_sample_age_seconds:scraped_1m",
}


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
