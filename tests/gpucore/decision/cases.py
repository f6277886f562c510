"""Helpers shared by the recommend() tests (test_framework_*.py, api/test_recommendations.py): strategy shorthands,
the contract's field names and one-call wrappers."""

import pytest

from gpucore.decision import BUILTIN_CATALOG, ProfileError, WorkloadProfile, recommend
from gpucore.vocabulary import Strategy

D, M, TS = Strategy.DEDICATED, Strategy.MIG, Strategy.TIME_SLICING
# The allocation fields of the Recommendation JSON contract, on a recommendation and on each alternative (written
# out here, not taken from the code under test); the recommendation adds "rationale" and "alternatives".
CORE_FIELDS = {
    "strategy",
    "resource_name",
    "quantity",
    "replicas",
    "gpu_model",
    "mig_profile",
    "time_slice_replicas",
    "node_selector",
    "expected_overhead_pct",
    "utilization_target_pct",
    "estimated_monthly_cost",
    "saving_vs_dedicated_pct",
    "gpu_share",
    "estimated_cost",
}


def rec(*, catalog=BUILTIN_CATALOG, options=None, **fields):
    return recommend(WorkloadProfile.from_mapping(fields), catalog, **(options or {}))


def refusal(*, options=None, **fields):
    with pytest.raises(ProfileError) as caught:
        rec(options=options, **fields)
    return caught.value.errors


def text(recommendation):
    return "\n".join(recommendation.rationale)
