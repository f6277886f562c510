"""Validators shared by the allocations models (Kubernetes names and GPU resource names)."""

from __future__ import annotations

from django.core.validators import RegexValidator

dns_label_validator = RegexValidator(
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$",
    "Use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit "
    "(a Kubernetes DNS label).",
)
resource_name_validator = RegexValidator(
    r"^nvidia\.com/(gpu|gpu\.shared|mig-\d+g\.\d+gb(\.me)?)$",
    "Use a Kubernetes GPU resource name such as 'nvidia.com/gpu' or 'nvidia.com/mig-2g.10gb'.",
)
