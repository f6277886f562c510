"""Reading the groups claim of an OIDC login and turning it into team memberships and platform groups (pure).

Identity providers name groups differently: Keycloak sends paths (``/ml/vision``, with a trailing slash from some
mappers), Entra ID sends group object ids (GUIDs, in any case when pasted by hand), Okta and Dex send plain names.
``normalize_group`` makes the claim's values and the admin's mapping rows comparable; ``desired_access`` applies the
mapping rows to one login's groups. Nothing here touches the database, so every rule is tested without one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

_GUID = re.compile(r"^\{?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\}?$")
# Roles of a team membership, weakest first: several groups mapping one team give the strongest.
ROLE_RANK = {"member": 0, "lead": 1}


def normalize_group(value: str) -> str:
    """One spelling per group: GUIDs lower-case without braces, paths without a trailing slash, no blanks around."""
    text = value.strip()
    if _GUID.match(text):
        return text.strip("{}").lower()
    if text.startswith("/"):
        text = "/" + text.strip("/")
    return text


def is_guid(value: str) -> bool:
    """Whether a group is an object id (Entra ID) rather than a name or a path."""
    return bool(_GUID.match(value.strip()))


def groups_from_claims(
    *, id_token: Mapping[str, Any] | None, userinfo: Mapping[str, Any] | None, claim: str
) -> list[str] | None:
    """The login's groups, normalized; None when the claim is missing or incomplete (then nothing may change).

    The ID token is read first (Entra ID puts groups only there), then the UserInfo answer when it speaks for the same
    subject. Entra ID's "overage" (a user in more groups than a token holds: ``_claim_names`` points elsewhere) is an
    incomplete list and counts as missing, so a large directory never strips memberships. A single string is read as
    a one-group list (some providers do that for one group); any other shape is missing.
    """
    for source in (id_token, userinfo):
        if not source:
            continue
        names = source.get("_claim_names")
        if "hasgroups" in source or (isinstance(names, Mapping) and claim in names):
            return None
        if claim not in source:
            continue
        if source is userinfo and id_token and userinfo.get("sub") != id_token.get("sub"):
            return None
        value = source[claim]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            return None
        return list(dict.fromkeys(normalize_group(item) for item in value if item.strip()))
    return None


@dataclass(frozen=True)
class MappingRule:
    """One row of the admin's mapping: an IdP group and what it grants (a team with a role, and/or a platform group)."""

    group: str
    team_id: int | None = None
    role: str = "member"
    access_group_id: int | None = None
    include_subgroups: bool = False

    def matches(self, group: str) -> bool:
        """Whether a (normalized) claim group is this rule's group, or one of its subgroups when asked."""
        mine = normalize_group(self.group)
        if group == mine:
            return True
        return self.include_subgroups and mine.startswith("/") and group.startswith(mine.rstrip("/") + "/")


@dataclass(frozen=True)
class DesiredAccess:
    """What one login's groups grant, and which teams and platform groups the mapping manages at all.

    Only managed teams and groups are changed by a login: a membership added by hand in a team that no mapping row
    names is left alone.
    """

    teams: dict[int, str] = field(default_factory=dict)
    access_groups: frozenset[int] = frozenset()
    managed_teams: frozenset[int] = frozenset()
    managed_access_groups: frozenset[int] = frozenset()


def desired_access(groups: Iterable[str], rules: Iterable[MappingRule]) -> DesiredAccess:
    """The team roles and platform groups the groups grant under the rules (the strongest role per team)."""
    rules = list(rules)
    claimed = [normalize_group(group) for group in groups]
    teams: dict[int, str] = {}
    access: set[int] = set()
    for rule in rules:
        if not any(rule.matches(group) for group in claimed):
            continue
        if rule.team_id is not None:
            current = teams.get(rule.team_id)
            if current is None or ROLE_RANK[rule.role] > ROLE_RANK[current]:
                teams[rule.team_id] = rule.role
        if rule.access_group_id is not None:
            access.add(rule.access_group_id)
    return DesiredAccess(
        teams=teams,
        access_groups=frozenset(access),
        managed_teams=frozenset(rule.team_id for rule in rules if rule.team_id is not None),
        managed_access_groups=frozenset(rule.access_group_id for rule in rules if rule.access_group_id is not None),
    )
