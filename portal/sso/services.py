"""Applying an identity provider's groups to a user at login: team memberships and platform groups, atomically."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser, Group
from django.db import transaction

from allocations.models import Membership, Team
from allocations.teams.services import membership_delete, membership_set
from audit.services import audit_record
from portal.group_claims import desired_access
from portal.models import GroupMapping, GroupSyncPolicy

logger = logging.getLogger(__name__)
VIA = "sso"


@dataclass
class SyncResult:
    """What a login changed: teams joined or re-roled, teams left, platform groups granted and withdrawn."""

    applied: bool = False
    joined: dict[str, str] = field(default_factory=dict)
    left: list[str] = field(default_factory=list)
    granted: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.joined or self.left or self.granted or self.withdrawn)


def _group_names(user: AbstractBaseUser) -> list[str]:
    return sorted(user.groups.values_list("name", flat=True))


def sso_groups_apply(*, user: AbstractBaseUser, groups: list[str] | None) -> SyncResult:
    """Make the user's mapped team memberships and platform groups match the login's groups claim.

    ``groups`` None (the claim was missing or incomplete) changes nothing; an empty list changes something only when
    the policy says so. Teams and platform groups that no mapping row names are never touched.
    """
    if groups is None:
        logger.info("SSO login of %s carried no usable groups claim: memberships unchanged", user.get_username())
        return SyncResult()
    if not groups and not GroupSyncPolicy.current().empty_claim_removes:
        logger.info("SSO login of %s carried an empty groups claim: memberships unchanged", user.get_username())
        return SyncResult()
    rules = [mapping.as_rule() for mapping in GroupMapping.objects.all()]
    wanted = desired_access(groups, rules)
    result = SyncResult(applied=True)
    with transaction.atomic():
        teams = Team.objects.in_bulk(wanted.managed_teams)
        current = {m.team_id: m.role for m in Membership.objects.filter(user=user, team_id__in=wanted.managed_teams)}
        for team_id, role in sorted(wanted.teams.items()):
            if current.get(team_id) != role:
                membership_set(team=teams[team_id], user=user, role=role, acting_user=None, via=VIA)
                result.joined[teams[team_id].slug] = role
        for team_id in sorted(set(current) - set(wanted.teams)):
            membership_delete(team=teams[team_id], user=user, acting_user=None, via=VIA)
            result.left.append(teams[team_id].slug)
        access = Group.objects.in_bulk(wanted.managed_access_groups)
        groups_before = _group_names(user)
        held = set(user.groups.filter(pk__in=wanted.managed_access_groups).values_list("pk", flat=True))
        for group_id in sorted(wanted.access_groups - held):
            user.groups.add(access[group_id])
            result.granted.append(access[group_id].name)
        for group_id in sorted(held - wanted.access_groups):
            user.groups.remove(access[group_id])
            result.withdrawn.append(access[group_id].name)
        if result.granted or result.withdrawn:  # platform groups carry permissions (approve): audited like the admin
            audit_record(
                actor=None,
                actor_label=VIA,
                obj=user,
                before={"groups": groups_before},
                after={"groups": _group_names(user)},
                comment="platform groups from the identity provider's groups claim",
            )
    if result.changed:
        logger.info(
            "SSO login of %s: joined %s, left %s, granted %s, withdrawn %s",
            user.get_username(),
            result.joined,
            result.left,
            result.granted,
            result.withdrawn,
        )
    return result
