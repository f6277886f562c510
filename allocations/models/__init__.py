"""Teams, SLA tiers, the GPU catalog, clusters and node pools, quotas, and GPU requests with their event log.

One module per responsibility; everything is importable from ``allocations.models`` as before.
"""

from allocations.choices import (
    ClusterBackend,
    ClusterScheduler,
    DeviceApi,
    IsolationFloor,
    RequestStatus,
    Role,
    SharingMode,
    WorkloadType,
)
from allocations.models.catalog import GpuModel, MigProfileDefinition
from allocations.models.clusters import Cluster, NodePool
from allocations.models.gpu_requests import (
    ALLOWED_TRANSITIONS,
    CANCELLABLE_STATUSES,
    EXTENDABLE_STATUSES,
    MAX_EXTENSION_HOURS,
    POLLING_STATUSES,
    QUOTA_HOLDING_STATUSES,
    REAPPLICABLE_STATUSES,
    RELEASABLE_STATUSES,
    TERMINAL_STATUSES,
    AllocationExtension,
    ExtensionStatus,
    GpuRequest,
    RequestEvent,
)
from allocations.models.idempotency import IdempotencyKey
from allocations.models.list_preferences import SavedListColumns
from allocations.models.mig_plans import (
    MIG_PLAN_TRANSITIONS,
    DrainPolicy,
    DynamicMigInstance,
    MigNodeLayout,
    MigPlan,
    MigPlanEvent,
    MigPlanStatus,
    NodeStep,
)
from allocations.models.quota_requests import QuotaIncreaseRequest, QuotaRequestStatus
from allocations.models.request_templates import RequestTemplate
from allocations.models.reservations import Reservation, ReservationStatus
from allocations.models.teams import Membership, Quota, SlaTier, Team
from allocations.models.validators import dns_label_validator, resource_name_validator

__all__ = [
    "ALLOWED_TRANSITIONS",
    "CANCELLABLE_STATUSES",
    "EXTENDABLE_STATUSES",
    "MAX_EXTENSION_HOURS",
    "MIG_PLAN_TRANSITIONS",
    "POLLING_STATUSES",
    "QUOTA_HOLDING_STATUSES",
    "REAPPLICABLE_STATUSES",
    "RELEASABLE_STATUSES",
    "TERMINAL_STATUSES",
    "AllocationExtension",
    "Cluster",
    "ClusterBackend",
    "ClusterScheduler",
    "DeviceApi",
    "DrainPolicy",
    "DynamicMigInstance",
    "ExtensionStatus",
    "GpuModel",
    "GpuRequest",
    "IdempotencyKey",
    "IsolationFloor",
    "Membership",
    "MigNodeLayout",
    "MigPlan",
    "MigPlanEvent",
    "MigPlanStatus",
    "MigProfileDefinition",
    "NodePool",
    "NodeStep",
    "Quota",
    "QuotaIncreaseRequest",
    "QuotaRequestStatus",
    "RequestEvent",
    "RequestStatus",
    "RequestTemplate",
    "Reservation",
    "ReservationStatus",
    "Role",
    "SavedListColumns",
    "SharingMode",
    "SlaTier",
    "Team",
    "WorkloadType",
    "dns_label_validator",
    "resource_name_validator",
]
