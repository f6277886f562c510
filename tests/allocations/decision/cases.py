"""Helpers shared by the recommend() tests (test_framework_*.py): strategy shorthands and one-call wrappers."""

import pytest

from allocations.decision import BUILTIN_CATALOG, ProfileError, Strategy, WorkloadProfile, recommend

D, M, TS = Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING


def rec(*, catalog=BUILTIN_CATALOG, options=None, **fields):
    return recommend(WorkloadProfile.from_mapping(fields), catalog, **(options or {}))


def refusal(*, options=None, **fields):
    with pytest.raises(ProfileError) as caught:
        rec(options=options, **fields)
    return caught.value.errors


def text(recommendation):
    return "\n".join(recommendation.rationale)
