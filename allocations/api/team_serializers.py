"""Output serializers of the teams API: a team, its members and its quotas with what it holds."""

from __future__ import annotations

from rest_framework import serializers

from allocations.models import Membership, Quota, Team


class TeamMemberSerializer(serializers.ModelSerializer):
    """A member of a team and their role."""

    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role"]
        read_only_fields = fields


class QuotaSerializer(serializers.ModelSerializer):
    """One quota of a team with what the team holds against it now."""

    cluster = serializers.SlugRelatedField(slug_field="name", read_only=True, allow_null=True)
    node_pool = serializers.StringRelatedField(read_only=True, allow_null=True, help_text="cluster/pool")
    scope = serializers.CharField(source="scope_label", read_only=True)
    used = serializers.SerializerMethodField(
        help_text="Units the team's approved requests hold now (running, provisioning or waiting to start), counted "
        "against the nominal quota: the pages' Used."
    )
    nominal = serializers.IntegerField(read_only=True, help_text="Kueue's nominalQuota: held without borrowing.")

    class Meta:
        model = Quota
        fields = [
            "id",
            "resource_name",
            "cluster",
            "node_pool",
            "scope",
            "limit",
            "nominal",
            "borrowing_limit",
            "lending_limit",
            "used",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "limit": {"help_text": "The nominal quota (same as nominal)."},
            "borrowing_limit": {"help_text": "Units preemptible (tier 3) requests may borrow beyond it; null: none."},
            "lending_limit": {"help_text": "The most of the unused quota other teams may borrow; null: all."},
        }

    def get_used(self, obj: Quota) -> int:
        return int(self.context.get("quota_usage", {}).get(obj.pk, 0))


class TeamSerializer(serializers.ModelSerializer):
    """A team with its members and its quotas (used / nominal / borrowing, as the pages show them)."""

    members = TeamMemberSerializer(source="memberships", many=True, read_only=True)
    quotas = QuotaSerializer(many=True, read_only=True)

    class Meta:
        model = Team
        fields = ["slug", "name", "namespace", "cost_center", "monthly_gpu_hour_budget", "members", "quotas"]
        read_only_fields = fields
