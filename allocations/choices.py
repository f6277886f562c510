"""The fixed vocabularies of the allocations app: roles, isolation floors, sharing modes, backends, workload types,
strategies and request statuses."""

from django.db import models


class Role(models.TextChoices):
    MEMBER = "member", "Member"
    LEAD = "lead", "Team lead"


class IsolationFloor(models.TextChoices):
    DEDICATED = "dedicated", "Dedicated GPU only"
    HARDWARE = "hardware", "Hardware isolation (MIG or dedicated)"
    NONE = "none", "Any strategy"


class SharingMode(models.TextChoices):
    NONE = "none", "None (whole GPUs)"
    MIG = "mig", "MIG"
    TIME_SLICING = "time-slicing", "Time-slicing"


class ClusterBackend(models.TextChoices):
    KUBERNETES = "kubernetes", "Kubernetes API (server-side apply)"
    GITOPS = "gitops", "GitOps tree (Argo CD / Flux)"


class WorkloadType(models.TextChoices):
    TRAINING = "training", "Training"
    BATCH_INFERENCE = "batch_inference", "Batch inference"
    REALTIME_INFERENCE = "realtime_inference", "Real-time inference"
    DEVELOPMENT = "development", "Development"
    HPC_SIMULATION = "hpc_simulation", "HPC simulation"


class Strategy(models.TextChoices):
    DEDICATED = "dedicated", "Dedicated GPU"
    MIG = "mig", "MIG slice"
    TIME_SLICING = "time-slicing", "Time-sliced share"


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
