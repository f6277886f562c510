"""Parts printed in cents add up to their total printed in cents: the largest remainders get the cents left."""

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from gpucore.pricing import cents_adding_up, to_cents


def test_two_parts_that_each_round_down_give_the_cent_to_the_larger_remainder() -> None:
    # 2657.224 + 404.813 = 3062.037: each rounded alone sums to 3062.03, the total prints 3062.04.
    parts = cents_adding_up({"dave": Decimal("2657.224"), "alice": Decimal("404.813")})

    assert parts == {"dave": Decimal("2657.23"), "alice": Decimal("404.81")}
    assert sum(parts.values()) == to_cents(Decimal("3062.037"))
    assert cents_adding_up({}) == {}


@given(st.lists(st.decimals(min_value=0, max_value=100000, places=6), min_size=1, max_size=30))
def test_parts_always_sum_to_the_rounded_total_and_move_less_than_a_cent(values: list[Decimal]) -> None:
    amounts = dict(enumerate(values))
    parts = cents_adding_up(amounts)

    assert sum(parts.values()) == to_cents(sum(values, Decimal(0)))
    assert all(abs(parts[key] - amounts[key]) < Decimal("0.01") for key in amounts)
