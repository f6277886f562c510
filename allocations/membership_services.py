"""Writes of team memberships: add a user to a team (or change their role) and remove them.

Kept beside ``allocations.services`` (same conventions: keyword-only arguments with ``acting_user``, one transaction,
``full_clean`` before ``save``). ``acting_user`` is None when the system acts, as single sign-on does when it applies
the identity provider's groups at login; ``via`` then says which.
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from allocations.models import Membership, Role, Team
from audit.services import audit_record, audit_snapshot

logger = logging.getLogger(__name__)


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
