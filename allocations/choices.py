"""The fixed vocabularies of the allocations app: roles, backends and request statuses, and the core's vocabulary
(isolation floors, sharing modes, workload types) as Django choices."""

from enum import StrEnum

from django.db import models

from gpucore import vocabulary


def _choices_from(enum: type[StrEnum]) -> type[models.TextChoices]:
    """Django choices with the core vocabulary's values and labels, so the two cannot drift apart."""
    return models.TextChoices(
        enum.__name__, [(member.name, (member.value, vocabulary.label(member))) for member in enum]
    )


IsolationFloor = _choices_from(vocabulary.IsolationFloor)
SharingMode = _choices_from(vocabulary.SharingMode)
WorkloadType = _choices_from(vocabulary.WorkloadType)


class Role(models.TextChoices):
    MEMBER = "member", "Member"
    LEAD = "lead", "Team lead"


class ClusterBackend(models.TextChoices):
    KUBERNETES = "kubernetes", "Kubernetes API (server-side apply)"
    GITOPS = "gitops", "GitOps tree (Argo CD / Flux)"


class ClusterScheduler(models.TextChoices):
    DEFAULT = "default", "Kubernetes default scheduler"
    KUEUE = "kueue", "Kueue (quotas, borrowing, all-or-nothing admission)"
    KAI = "kai", "KAI Scheduler (queues with quota, limit and over-quota weight)"


class DeviceApi(models.TextChoices):
    DEVICE_PLUGIN = "device-plugin", "Device plugin (nvidia.com/gpu, nvidia.com/mig-* resources)"
    DRA = "dra", "Dynamic Resource Allocation (resource.k8s.io/v1 claims, NVIDIA's DRA driver)"


class RequestStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    PENDING_APPROVAL = "pending_approval", "Pending approval"
    APPROVED = "approved", "Approved"
    PROVISIONING = "provisioning", "Provisioning"
    ACTIVE = "active", "Active"
    REJECTED = "rejected", "Rejected"
    FAILED = "failed", "Failed"
    RELEASED = "released", "Released"
    EXPIRED = "expired", "Expired"
    # Scaled to zero by the idle reclaim policy: holds no GPU, is not billed, and may be resumed.
    SUSPENDED = "suspended", "Suspended (idle)"
