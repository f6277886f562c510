"""Reads of prices: the price book in effect, every book as pure price periods, the GPU rates recommendations quote
(``settings.GPU_PRICE_PROVIDER``), the catalog's reference rates for hours no book covers, and the catalog models
imports and price books are checked against.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal

from django.conf import settings
from django.utils import timezone

from allocations.models import GpuModel
from allocations.reference_data import catalog_from_db
from billing.models import PriceBook
from gpucore.chargeback import PricePeriod
from gpucore.pricing import catalog_hourly_rate
from infra.reference_cache import REFERENCE_DATA, cached


def price_book_in_effect(*, at: datetime | None = None) -> PriceBook | None:
    """The price book in effect at ``at`` (now by default): the latest whose date has begun, in UTC."""
    day = (at or timezone.now()).astimezone(UTC).date()
    return PriceBook.objects.filter(effective_from__lte=day).order_by("-effective_from").first()


def current_gpu_rates() -> dict[str, Decimal]:
    """Model name -> hourly price of one whole GPU in the price book in effect now (empty when there is none).

    Every recommendation asks: the books' rates are kept per process (``infra.reference_cache``; a price book
    change rereads them) and the one in effect is picked by today's date (UTC), so a book that
    takes effect at midnight applies without a write.
    """
    day = timezone.now().astimezone(UTC).date()
    for effective_from, rates in cached(REFERENCE_DATA, "price-book-rates", _every_book_rates):
        if effective_from <= day:
            return dict(rates)
    return {}


def _every_book_rates() -> tuple[tuple[date, tuple[tuple[str, Decimal], ...]], ...]:
    """Each price book's (effective_from, GPU rates), latest first."""
    books = PriceBook.objects.order_by("-effective_from").prefetch_related("gpu_prices")
    return tuple(
        (book.effective_from, tuple((price.gpu_model, price.hourly_rate) for price in book.gpu_prices.all()))
        for book in books
    )


def price_periods(*, until: datetime) -> list[PricePeriod]:
    """Every price book that takes effect before ``until``, as pure price periods (starting 00:00 UTC)."""
    books = PriceBook.objects.filter(effective_from__lt=until.date() + timedelta(days=1)).prefetch_related(
        "gpu_prices", "sla_multipliers"
    )
    return [
        PricePeriod(
            starts=datetime.combine(book.effective_from, time(0), tzinfo=UTC),
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
