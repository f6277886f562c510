"""Serializers of allocation extensions: the body of ``extend`` and an extension with its request's expiry now."""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from allocations.api.serializers import EventStatusField
from allocations.models import MAX_EXTENSION_HOURS, AllocationExtension, ExtensionStatus


class AllocationExtensionCreateSerializer(serializers.Serializer):
    """The body of ``extend``: how many hours to add to the allocation, and why."""

    hours = serializers.DecimalField(
        max_digits=5,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=MAX_EXTENSION_HOURS,
        coerce_to_string=False,
        help_text="Hours to add: more than 0, at most 720 (30 days), to the hundredth.",
    )
    reason = serializers.CharField(max_length=5000, help_text="Why the allocation needs more time (approvers see it).")


@extend_schema_field({"type": "string", "enum": list(ExtensionStatus.values)})
class _ExtensionStatusField(serializers.CharField):
    """An extension's status: pending, approved or rejected."""


class AllocationExtensionSerializer(serializers.ModelSerializer):
    """An extension of a request: the hours asked for and why, its status and decision, and the request's expiry now."""

    request = serializers.PrimaryKeyRelatedField(read_only=True)
    requested_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    status = _ExtensionStatusField(read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)
    request_status = EventStatusField(source="request.status", read_only=True)
    request_expires_at = serializers.DateTimeField(
        source="request.expires_at",
        read_only=True,
        allow_null=True,
        help_text="The request's expiry now (null before it runs when it has only a duration).",
    )
    request_duration_hours = serializers.DecimalField(
        source="request.duration_hours",
        max_digits=8,
        decimal_places=2,
        read_only=True,
        allow_null=True,
        coerce_to_string=False,
    )

    class Meta:
        model = AllocationExtension
        fields = [
            "id",
            "request",
            "requested_by",
            "hours",
            "reason",
            "status",
            "decided_by",
            "decided_at",
            "decision_comment",
            "created_at",
            "request_status",
            "request_expires_at",
            "request_duration_hours",
        ]
        read_only_fields = fields
        extra_kwargs = {"hours": {"coerce_to_string": False}}
