"""Price book YAML validation: every error names its field (pure: no database)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal as D
from types import SimpleNamespace

import pytest

from gpucore.pricebook import PriceBookError, load_price_book_text
from gpucore.pricing import book_in_effect, price_book_starts, to_cents

DESIGN_EXAMPLE = """
currency: USD
effective_from: 2026-10-01
gpu_models:                      # list price per GPU-hour ...
  A100-40GB: {hourly: "2.00"}
  H100-80GB:                     # ... or the TCO inputs
    {purchase_price: "27500", amortization_months: 36, tdp_watts: 700, pue: "1.4", kwh_price: "0.12",
     ops_overhead_pct_per_year: "25"}
sla_multipliers: {tier1_realtime: "1.5", tier2_batch: "1.0", tier3_development: "0.8"}
"""


def test_design_example_parses() -> None:
    spec = load_price_book_text(DESIGN_EXAMPLE, currency="USD")
    assert spec.effective_from == dt.date(2026, 10, 1)
    rates = {p.gpu_model: p.hourly_rate for p in spec.gpu_prices}
    assert rates["A100-40GB"] == D("2.00") and to_cents(rates["H100-80GB"]) == D("1.95")
    assert spec.sla_multipliers == {"tier1_realtime": D("1.5"), "tier2_batch": D("1.0"), "tier3_development": D("0.8")}


def errors_of(text: str, currency: str | None = "USD") -> dict[str, list[str]]:
    with pytest.raises(PriceBookError) as info:
        load_price_book_text(text, currency=currency)
    return info.value.errors


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("currency: USD\ngpu_models: {T4: {hourly: '1'}}", "effective_from", "required"),
        ("effective_from: 2026-13-01\ngpu_models: {T4: {hourly: '1'}}", "effective_from", "date"),
        ("effective_from: 2026-10-01", "gpu_models", "required"),
        ("effective_from: 2026-10-01\ngpu_models: {T4: {hourly: 'abc'}}", "gpu_models.T4.hourly", "number"),
        ("effective_from: 2026-10-01\ngpu_models: {T4: {hourly: '-1'}}", "gpu_models.T4.hourly", "at least 0"),
        ("effective_from: 2026-10-01\ngpu_models: {T4: {hourly: '1', pue: '1.2'}}", "gpu_models.T4", "cannot be"),
        ("effective_from: 2026-10-01\ngpu_models: {T4: {tdp_watts: 70}}", "gpu_models.T4.purchase_price", "required"),
        (
            "effective_from: 2026-10-01\ngpu_models: {T4: {purchase_price: 2000, tdp_watts: 70, pue: '0.9'}}",
            "gpu_models.T4.pue",
            "at least 1",
        ),
        (
            "effective_from: 2026-10-01\n"
            "gpu_models: {T4: {purchase_price: 2000, tdp_watts: 70, amortization_months: 0}}",
            "gpu_models.T4.amortization_months",
            "at least 1",
        ),
        (
            "effective_from: 2026-10-01\ngpu_models: {T4: {purchase_price: 2000, tdp_watts: 70, watts: 3}}",
            "gpu_models.T4.watts",
            "unknown",
        ),
        ("effective_from: 2026-10-01\ngpu_models: {T4: 2}", "gpu_models.T4", "hourly"),
        (
            "effective_from: 2026-10-01\ngpu_models: {T4: {hourly: 1}}\nsla_multipliers: {tier1: x}",
            "sla_multipliers.tier1",
            "number",
        ),
        ("currency: EUR\neffective_from: 2026-10-01\ngpu_models: {T4: {hourly: 1}}", "currency", "never converted"),
        ("currency: dollars\neffective_from: 2026-10-01\ngpu_models: {T4: {hourly: 1}}", "currency", "three-letter"),
        ("effective_from: 2026-10-01\ngpu_models: {T4: {hourly: 1}}\nprice: 3", "price", "unknown"),
        ("effective_from: 2026-10-01 10:00:00\ngpu_models: {T4: {hourly: 1}}", "effective_from", "00:00 UTC"),
        ("- just a list", "(file)", "mapping"),
        ("gpu_models: {T4: {hourly: 1}\n", "(file)", "YAML"),
    ],
)
def test_errors_name_the_field(text: str, field: str, words: str) -> None:
    errors = errors_of(text)
    assert field in errors, errors
    assert words in " ".join(errors[field])


def test_every_problem_is_reported_at_once() -> None:
    errors = errors_of("gpu_models: {T4: {hourly: x}, L4: {tdp_watts: 72}}\nsla_multipliers: {tier1: '-2'}")
    assert {"effective_from", "gpu_models.T4.hourly", "gpu_models.L4.purchase_price", "sla_multipliers.tier1"} <= set(
        errors
    )
    assert "gpu_models.T4.hourly" in str(PriceBookError(errors))


SEP_1, OCT_1, NOV_1 = dt.date(2026, 9, 1), dt.date(2026, 10, 1), dt.date(2026, 11, 1)


def test_the_book_in_effect_is_the_latest_that_has_begun_at_00_utc() -> None:
    dated = ((2, OCT_1), (1, SEP_1), (3, NOV_1))  # in no order
    books = [SimpleNamespace(version=v, starts=price_book_starts(day)) for v, day in dated]
    midnight = dt.datetime(2026, 10, 1, tzinfo=dt.UTC)
    assert book_in_effect(books, at=midnight - dt.timedelta(microseconds=1)).version == 1
    assert book_in_effect(books, at=midnight).version == 2
    # 02:00 on 1 October in UTC+3 is still 30 September in UTC.
    assert book_in_effect(books, at=dt.datetime(2026, 10, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=3)))).version == 1
    assert book_in_effect(books, at=dt.datetime(2027, 1, 1, tzinfo=dt.UTC)).version == 3
    assert book_in_effect(books, at=dt.datetime(2026, 8, 31, tzinfo=dt.UTC)) is None
    assert book_in_effect([], at=midnight) is None
