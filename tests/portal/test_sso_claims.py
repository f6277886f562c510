"""The groups claim and the mapping rules, without a database: spellings, missing vs empty, overage, strongest role."""

from __future__ import annotations

import pytest

from portal.group_claims import MappingRule, desired_access, groups_from_claims, is_guid, normalize_group

GUID = "1b2c3d4e-0000-4000-8000-00000000abcd"


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("/ml/vision/", "/ml/vision"),
        ("/ml/vision", "/ml/vision"),
        ("  /ml/vision//", "/ml/vision"),
        (GUID.upper(), GUID),
        ("{" + GUID + "}", GUID),
        ("ML-Engineers", "ML-Engineers"),
    ],
)
def test_group_spellings_normalize(raw: str, normalized: str) -> None:
    assert normalize_group(raw) == normalized


def test_guid_detection() -> None:
    assert is_guid(GUID.upper())
    assert not is_guid("/ml/vision")


def test_groups_come_from_the_id_token_first() -> None:
    id_token = {"sub": "u1", "groups": ["/ml/vision/", GUID.upper()]}
    userinfo = {"sub": "u1", "groups": ["/other"]}
    assert groups_from_claims(id_token=id_token, userinfo=userinfo, claim="groups") == ["/ml/vision", GUID]


def test_groups_fall_back_to_userinfo_of_the_same_subject_only() -> None:
    assert groups_from_claims(id_token={"sub": "u1"}, userinfo={"sub": "u1", "groups": ["a"]}, claim="groups") == ["a"]
    assert groups_from_claims(id_token={"sub": "u1"}, userinfo={"sub": "u2", "groups": ["a"]}, claim="groups") is None


def test_missing_claim_is_none_and_empty_claim_is_an_empty_list() -> None:
    assert groups_from_claims(id_token={"sub": "u1"}, userinfo={"sub": "u1"}, claim="groups") is None
    assert groups_from_claims(id_token={"sub": "u1", "groups": []}, userinfo=None, claim="groups") == []


def test_a_configured_claim_name_is_read() -> None:
    claims = {"sub": "u1", "roles": "gpu-users"}
    assert groups_from_claims(id_token=claims, userinfo=None, claim="roles") == ["gpu-users"]
    assert groups_from_claims(id_token=claims, userinfo=None, claim="groups") is None


@pytest.mark.parametrize(
    "id_token",
    [
        {"sub": "u1", "hasgroups": True},
        {"sub": "u1", "_claim_names": {"groups": "src1"}, "_claim_sources": {"src1": {"endpoint": "https://graph"}}},
    ],
    ids=["hasgroups", "claim-names"],
)
def test_entra_overage_counts_as_missing(id_token: dict) -> None:
    assert groups_from_claims(id_token=id_token, userinfo=None, claim="groups") is None


@pytest.mark.parametrize("value", [42, [1, 2], {"a": 1}, ["ok", None]])
def test_a_malformed_claim_counts_as_missing(value: object) -> None:
    assert groups_from_claims(id_token={"sub": "u1", "groups": value}, userinfo=None, claim="groups") is None


def test_desired_access_takes_the_strongest_role_and_collects_platform_groups() -> None:
    rules = [
        MappingRule(group="/ml/vision", team_id=1, role="member"),
        MappingRule(group="/ml/vision-leads", team_id=1, role="lead"),
        MappingRule(group=GUID.upper(), team_id=2, role="member", access_group_id=7),
        MappingRule(group="/finance", access_group_id=8),
    ]
    wanted = desired_access(["/ml/vision", "/ml/vision-leads", GUID], rules)
    assert wanted.teams == {1: "lead", 2: "member"}
    assert wanted.access_groups == {7}
    assert wanted.managed_teams == {1, 2}
    assert wanted.managed_access_groups == {7, 8}


def test_subgroups_match_only_when_the_rule_asks() -> None:
    exact = MappingRule(group="/ml/vision", team_id=1)
    tree = MappingRule(group="/ml/vision/", team_id=1, include_subgroups=True)
    assert not exact.matches("/ml/vision/interns")
    assert tree.matches("/ml/vision/interns")
    assert tree.matches("/ml/vision")
    assert not tree.matches("/ml/vision-leads")


def test_no_groups_grant_nothing_but_the_managed_sets_stay_known() -> None:
    wanted = desired_access([], [MappingRule(group="/ml/vision", team_id=1)])
    assert wanted.teams == {}
    assert wanted.managed_teams == {1}
