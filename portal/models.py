"""Single sign-on configuration that platform admins edit in the admin (which IdP groups grant what, and the
policy)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models

from allocations.choices import Role
from allocations.models import Team
from allocations.selectors import APPROVERS_GROUP
from billing.costs.visibility import FINANCE_GROUP
from portal.group_claims import MappingRule, normalize_group

# Platform groups single sign-on may grant: approving requests, and reading every team's costs.
GRANTABLE_GROUPS = (APPROVERS_GROUP, FINANCE_GROUP)


class GroupMapping(models.Model):
    """An identity-provider group and what its members get here: a team with a role, and/or a platform group."""

    group = models.CharField(
        max_length=255,
        help_text=(
            "The group as the groups claim carries it: a Keycloak path (/ml/vision), an Entra ID group object id "
            "(a GUID) or a plain name. Case matters except for GUIDs; a trailing slash does not."
        ),
    )
    include_subgroups = models.BooleanField(
        default=False,
        help_text="Also match members of its subgroups (Keycloak paths: /ml/vision matches /ml/vision/interns).",
    )
    team = models.ForeignKey(
        Team,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="sso_group_mappings",
        help_text="Members of the group join this team (and leave it when they leave the group).",
    )
    role = models.CharField(
        max_length=10,
        choices=Role.choices,
        default=Role.MEMBER,
        help_text="Their role in the team; with several groups on one team the strongest wins.",
    )
    access_group = models.ForeignKey(
        Group,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="sso_group_mappings",
        limit_choices_to={"name__in": GRANTABLE_GROUPS},
        verbose_name="platform group",
        help_text="Members of the group also get this platform role: Platform approvers or Finance.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["group", "team__name"]
        verbose_name = "SSO group mapping"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(team__isnull=False) | models.Q(access_group__isnull=False),
                name="sso_mapping_grants_something",
            ),
            models.UniqueConstraint(fields=["group", "team"], name="unique_sso_group_team"),
            models.UniqueConstraint(fields=["group", "access_group"], name="unique_sso_group_access"),
        ]

    def __str__(self) -> str:
        grants = []
        if self.team_id:
            grants.append(f"{self.team} ({self.get_role_display()})")
        if self.access_group_id:
            grants.append(str(self.access_group))
        return f"{self.group} → {', '.join(grants) or 'nothing'}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.group = normalize_group(self.group or "")
        super().save(*args, **kwargs)

    def clean(self) -> None:
        self.group = normalize_group(self.group or "")
        if not self.group:
            raise ValidationError({"group": "Name the identity-provider group."})
        if self.team_id is None and self.access_group_id is None:
            raise ValidationError("Choose a team, a platform group, or both: a mapping must grant something.")
        if self.access_group_id is not None and self.access_group.name not in GRANTABLE_GROUPS:
            raise ValidationError({"access_group": f"Single sign-on grants only {' or '.join(GRANTABLE_GROUPS)}."})

    def as_rule(self) -> MappingRule:
        """The row as the pure mapping rules take it."""
        return MappingRule(
            group=self.group,
            team_id=self.team_id,
            role=self.role,
            access_group_id=self.access_group_id,
            include_subgroups=self.include_subgroups,
        )


class GroupSyncPolicy(models.Model):
    """How a login's groups claim is applied (one row, edited in the admin)."""

    empty_claim_removes = models.BooleanField(
        default=False,
        verbose_name="an empty groups claim removes mapped memberships",
        help_text=(
            "Off (the default): a login whose groups claim is an empty list changes nothing, so a misconfigured "
            "provider cannot strip everyone's access. On: an empty list means the user is in no group, and their "
            "mapped team memberships and platform groups are removed. A missing claim never changes anything."
        ),
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "SSO group sync policy"
        verbose_name_plural = "SSO group sync policy"

    def __str__(self) -> str:
        return "SSO group sync policy"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.pk = 1  # one row: the policy
        super().save(*args, **kwargs)

    @classmethod
    def current(cls) -> GroupSyncPolicy:
        """The policy row (defaults when nobody has saved one)."""
        return cls.objects.filter(pk=1).first() or cls(pk=1)
