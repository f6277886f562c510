"""Version tokens and the values kept under them (allocations.version_tokens)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.db import transaction

from allocations.version_tokens import KeptUnderTokens, current_token, current_tokens, replace_tokens


def test_a_value_is_found_again_only_under_its_tokens_and_the_least_recent_leave_first() -> None:
    kept = KeptUnderTokens(limit=2)
    kept.put("a", ("t1",), 1)
    kept.put("b", ("t1",), 2)
    assert kept.get("a", ("t1",)) == 1  # now the most recently used
    assert kept.get("a", ("t2",)) is None
    kept.put("c", ("t1",), 3)
    assert kept.get("b", ("t1",)) is None  # the least recently used left
    assert (kept.get("a", ("t1",)), kept.get("c", ("t1",))) == (1, 3)
    unbounded = KeptUnderTokens()
    for n in range(100):
        unbounded.put(n, "t", n)
    assert unbounded.get(0, "t") == 0


@pytest.mark.django_db(transaction=True)
def test_tokens_are_created_once_and_replaced_now_and_at_commit() -> None:
    cache.clear()
    first = current_token("test:one")
    assert current_tokens(["test:one", "test:two"])[0] == first
    with transaction.atomic():
        replace_tokens(["test:one"])
        inside = current_token("test:one")
        assert inside != first
    assert current_token("test:one") not in (first, inside)  # replaced once more when it committed
