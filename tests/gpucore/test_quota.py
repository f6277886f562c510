"""Cohort quota arithmetic against the worked examples of Kueue's docs (shared/reference/kueue-quota.md)."""

from __future__ import annotations

import pytest

from gpucore.quota import CohortMember, QuotaError, admit, available


def test_without_a_cohort_a_queue_holds_its_nominal_quota() -> None:
    # Example 1: a single ClusterQueue admits iff the sum fits the nominal quota.
    alone = CohortMember(nominal=9, used=4)
    assert available(alone) == 5
    assert admit(alone, [], 5, may_borrow=True).fits
    assert not admit(alone, [], 6, may_borrow=True).fits


def test_borrowing_from_an_idle_cohort() -> None:
    # Example 2: team-a-cq 9, team-b-cq 12, both idle: team-a may admit up to 21.
    a, b = CohortMember(nominal=9), CohortMember(nominal=12)
    assert available(a, [b]) == 21
    assert available(b, [a]) == 21
    admission = admit(a, [b], 21, may_borrow=True)
    assert (admission.fits, admission.borrowed) == (True, 12)
    assert not admit(a, [b], 22, may_borrow=True).fits
    # Whatever team-b uses is no longer there to borrow.
    assert available(a, [CohortMember(nominal=12, used=10)]) == 11


def test_a_borrowing_limit_caps_what_a_queue_takes_from_the_cohort() -> None:
    # Example 3: team-a-cq nominal 9 with borrowingLimit 1: at most 10; team-b-cq has none: up to 21.
    a = CohortMember(nominal=9, borrowing_limit=1)
    b = CohortMember(nominal=12)
    assert available(a, [b]) == 10
    assert available(b, [a]) == 21
    assert admit(CohortMember(nominal=9, used=9, borrowing_limit=1), [b], 1, may_borrow=True).borrowed == 1
    assert available(CohortMember(nominal=9, used=10, borrowing_limit=1), [b]) == 0


def test_a_lending_limit_keeps_the_rest_for_its_owner() -> None:
    # Example 4: team-b-cq 12 with lendingLimit 1: while team-b uses at most 11, team-a reaches 9 + 1 = 10.
    a = CohortMember(nominal=9)
    for used in (0, 5, 11):
        assert available(a, [CohortMember(nominal=12, lending_limit=1, used=used)]) == 10
    # Using its lent unit too, team-b leaves team-a only its own 9.
    assert available(a, [CohortMember(nominal=12, lending_limit=1, used=12)]) == 9
    # team-b itself can still reach 9 + 12.
    assert available(CohortMember(nominal=12, lending_limit=1), [a]) == 21


def test_only_a_queue_that_may_borrow_goes_past_its_nominal_quota() -> None:
    a, b = CohortMember(nominal=4, used=3, borrowing_limit=4), CohortMember(nominal=8)
    refused = admit(a, [b], 2, may_borrow=False)
    assert (refused.fits, refused.nominal_left, refused.available) == (False, 1, 1)
    borrowed = admit(a, [b], 2, may_borrow=True)
    assert (borrowed.fits, borrowed.borrowed) == (True, 1)
    within = admit(a, [b], 1, may_borrow=False)
    assert (within.fits, within.borrowed) == (True, 0)
    # A zero borrowing limit borrows nothing.
    assert not admit(CohortMember(nominal=4, used=4, borrowing_limit=0), [b], 1, may_borrow=True).fits


def test_numbers_kueue_refuses() -> None:
    # Example 7: a lending limit above the nominal quota, and negative quotas, are refused.
    with pytest.raises(QuotaError, match="less than or equal to the nominalQuota"):
        CohortMember(nominal=12, lending_limit=13)
    with pytest.raises(QuotaError):
        CohortMember(nominal=-1)
    with pytest.raises(QuotaError):
        admit(CohortMember(nominal=1), [], -1, may_borrow=False)
