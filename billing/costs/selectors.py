"""Reads of prices: the price book in effect, every book as pure price periods, the GPU rates recommendations quote
(``settings.GPU_PRICE_PROVIDER``), the catalog's reference rates for hours no book covers, and the catalog models
imports and price books are checked against.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from django.conf import settings
from django.utils import timezone

from allocations.models import GpuModel
from allocations.reference_data import catalog_from_db
from billing.models import PriceBook
from gpucore.chargeback import PricePeriod
from gpucore.pricing import book_in_effect, catalog_hourly_rate
from infra.reference_cache import REFERENCE_DATA, cached


def price_book_in_effect(*, at: datetime | None = None) -> PriceBook | None:
    """The price book in effect at ``at`` (now by default): ``gpucore.pricing.book_in_effect`` over every book."""
    return book_in_effect(PriceBook.objects.all(), at=at or timezone.now())


def current_gpu_rates() -> dict[str, Decimal]:
    """Model name -> hourly price of one whole GPU in the price book in effect now (empty when there is none).

    Every recommendation asks: the books' rates are kept per process (``infra.reference_cache``; a price book
    change rereads them) and the one in effect is picked now, so a book that takes effect at
    midnight applies without a write.
    """
    book = book_in_effect(cached(REFERENCE_DATA, "price-book-rates", _every_book_rates), at=timezone.now())
    return dict(book.rates) if book is not None else {}


class _BookRates(NamedTuple):
    starts: datetime
    rates: tuple[tuple[str, Decimal], ...]


def _every_book_rates() -> tuple[_BookRates, ...]:
    """Each price book's start and GPU rates."""
    books = PriceBook.objects.prefetch_related("gpu_prices")
    return tuple(
        _BookRates(book.starts, tuple((price.gpu_model, price.hourly_rate) for price in book.gpu_prices.all()))
        for book in books
    )


def price_periods(*, until: datetime) -> list[PricePeriod]:
    """Every price book that takes effect before ``until``, as pure price periods (starting 00:00 UTC)."""
    books = PriceBook.objects.filter(effective_from__lt=until.date() + timedelta(days=1)).prefetch_related(
        "gpu_prices", "sla_multipliers"
    )
    return [
        PricePeriod(
            starts=book.starts,
            version=book.version,
            gpu_rates={p.gpu_model.casefold(): p.hourly_rate for p in book.gpu_prices.all()},
            sla_multipliers={m.tier_slug: m.multiplier for m in book.sla_multipliers.all()},
        )
        for book in books.order_by("effective_from")
    ]


def catalog_fallback_rates() -> dict[str, Decimal]:
    """Reference GPU-hour prices of catalog models, for hours no price book covers (USD only: never converted)."""
    if settings.PORTAL_CURRENCY != "USD":
        return {}
    # One basis for every model (gpucore.pricing.CATALOG_PRICE_BASIS): the list price, never TCO for some models.
    return {
        model.name.casefold(): rate for model in catalog_from_db() if (rate := catalog_hourly_rate(model)) is not None
    }


def catalog_models_by_name() -> dict[str, GpuModel]:
    """Catalog GPU models by case-folded name and alias, with their MIG profiles prefetched."""
    names: dict[str, GpuModel] = {}
    for model in GpuModel.objects.prefetch_related("mig_profiles"):
        for key in (model.name, *(model.aliases or [])):
            names[str(key).casefold()] = model
    return names
