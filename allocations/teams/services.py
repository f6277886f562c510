"""Writes of team memberships: add a user to a team (or change their role) and remove them.

Kept beside ``allocations.requests.services`` (same
conventions: keyword-only arguments with ``acting_user``, one transaction,
``full_clean`` before ``save``). ``acting_user`` is None when the system acts, as single sign-on does when it applies
the identity provider's groups at login; ``via`` then says which.
"""

from __future__ import annotations

import logging

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction

from allocations.models import Membership, Role, Team
from allocations.selectors import membership_role
from audit.services import audit_record, audit_snapshot

logger = logging.getLogger(__name__)
User = get_user_model()


def _actor(acting_user: AbstractBaseUser | None, via: str) -> str:
    return acting_user.get_username() if acting_user is not None else via


def membership_set(
    *, team: Team, user: AbstractBaseUser, role: str, acting_user: AbstractBaseUser | None, via: str = "system"
) -> tuple[Membership, bool]:
    """Make the user a member of the team with this role; returns the membership and whether anything changed."""
    if role not in Role.values:
        raise ValueError(f"Unknown team role {role!r}: use one of {', '.join(Role.values)}.")
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
        if membership is not None and membership.role == role:
            return membership, False
        before = membership.role if membership is not None else None
        snapshot = audit_snapshot(membership)
        if membership is None:
            membership = Membership(team=team, user=user, role=role)
        membership.role = role
        membership.full_clean(validate_unique=membership.pk is None)
        membership.save()
        audit_record(actor=acting_user, obj=membership, before=snapshot, actor_label=via)
    logger.info(
        "membership %s in %s: %s -> %s (by %s)", user.get_username(), team.slug, before, role, _actor(acting_user, via)
    )
    return membership, True


def membership_delete(
    *, team: Team, user: AbstractBaseUser, acting_user: AbstractBaseUser | None, via: str = "system"
) -> bool:
    """Remove the user from the team; returns whether there was a membership to remove."""
    with transaction.atomic():
        membership = Membership.objects.select_for_update().filter(team=team, user=user).first()
        if membership is None:
            return False
        before = membership.role
        audit_record(actor=acting_user, obj=membership, before=None, deleted=True, actor_label=via)
        membership.delete()
    logger.info(
        "membership %s in %s: %s -> removed (by %s)", user.get_username(), team.slug, before, _actor(acting_user, via)
    )
    return True


# --- A team lead manages the team's members from the team page ---------------------------------------------------


def team_members_refusal(*, user: AbstractBaseUser, team: Team) -> str | None:
    """Why ``user`` may not add, remove or re-role members of ``team`` (only its leads may), or None."""
    if not user.is_authenticated or membership_role(user=user, team=team) != Role.LEAD:
        return f"Only leads of team {team.name} can change its members."
    return None


def _require_lead(*, user: AbstractBaseUser, team: Team) -> None:
    refusal = team_members_refusal(user=user, team=team)
    if refusal:
        raise PermissionDenied(refusal)


def _keep_a_lead(*, team: Team, leaving: AbstractBaseUser) -> None:
    """Refuse a change that would leave the team without a lead (the leads' rows are locked while it is decided)."""
    leads = list(
        Membership.objects.select_for_update().filter(team=team, role=Role.LEAD).values_list("user_id", flat=True)
    )
    if leads == [leaving.pk]:
        raise ValidationError({"role": f"Team {team.name} needs at least one lead: make another member a lead first."})


def team_member_add(*, team: Team, username: str, role: str, acting_user: AbstractBaseUser) -> Membership:
    """A lead adds an existing portal user to the team with a role (audited); ValidationError naming the field."""
    _require_lead(user=acting_user, team=team)
    if role not in Role.values:
        raise ValidationError({"role": f"Choose a role: {' or '.join(str(label) for label in Role.labels)}."})
    user = User.objects.filter(username__iexact=username.strip(), is_active=True).first()
    if user is None:
        raise ValidationError({"username": f"No active user named {username.strip()!r}: they sign in once first."})
    if Membership.objects.filter(team=team, user=user).exists():
        raise ValidationError({"username": f"{user.get_username()} is already in team {team.name}."})
    membership, _ = membership_set(team=team, user=user, role=role, acting_user=acting_user, via="team page")
    return membership


def team_member_role_change(
    *, team: Team, member: AbstractBaseUser, role: str, acting_user: AbstractBaseUser
) -> Membership:
    """A lead changes a member's role (audited); the last lead cannot step down."""
    _require_lead(user=acting_user, team=team)
    if role not in Role.values:
        raise ValidationError({"role": f"Choose a role: {' or '.join(str(label) for label in Role.labels)}."})
    with transaction.atomic():
        if not Membership.objects.filter(team=team, user=member).exists():
            raise ValidationError({"member": f"{member.get_username()} is not in team {team.name}."})
        if role != Role.LEAD:
            _keep_a_lead(team=team, leaving=member)
        membership, _ = membership_set(team=team, user=member, role=role, acting_user=acting_user, via="team page")
    return membership


def team_member_remove(*, team: Team, member: AbstractBaseUser, acting_user: AbstractBaseUser) -> None:
    """A lead removes a member from the team (audited); the last lead cannot be removed."""
    _require_lead(user=acting_user, team=team)
    with transaction.atomic():
        _keep_a_lead(team=team, leaving=member)
        if not membership_delete(team=team, user=member, acting_user=acting_user, via="team page"):
            raise ValidationError({"member": f"{member.get_username()} is not in team {team.name}."})
