"""The pure decision core: GPU catalog, SLA tiers, workload profiles and the recommendation framework.

Imports nothing from Django, DRF, Celery or Kubernetes (an import-linter contract keeps it so).
"""

from gpucore.catalog import BUILTIN_CATALOG, Catalog, CatalogError, GpuModelSpec, MigProfile
from gpucore.decision.framework import (
    EXPECTED_OVERHEAD_PCT,
    ISOLATION,
    LATENCY_MEMORY_THRESHOLD_GB,
    UTILIZATION_TARGET_PCT,
    Alternative,
    Isolation,
    NodePools,
    Recommendation,
    recommend,
)
from gpucore.profile import ProfileError, WorkloadProfile
from gpucore.sla import DEFAULT_TIERS, DEFAULT_TIERS_BY_SLUG, SlaTierSpec
from gpucore.vocabulary import IsolationFloor, Strategy, WorkloadType

__all__ = [
    "BUILTIN_CATALOG",
    "DEFAULT_TIERS",
    "DEFAULT_TIERS_BY_SLUG",
    "EXPECTED_OVERHEAD_PCT",
    "ISOLATION",
    "LATENCY_MEMORY_THRESHOLD_GB",
    "UTILIZATION_TARGET_PCT",
    "Alternative",
    "Catalog",
    "CatalogError",
    "GpuModelSpec",
    "Isolation",
    "IsolationFloor",
    "MigProfile",
    "NodePools",
    "ProfileError",
    "Recommendation",
    "SlaTierSpec",
    "Strategy",
    "WorkloadProfile",
    "WorkloadType",
    "recommend",
]
