"""``manage.py load_price_book FILE.yaml``: validate a price book file and store it as the next version."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.costs.services import price_book_load
from gpucore.textfiles import NotUtf8Error, decode_utf8


class Command(BaseCommand):
    help = "Load a price book YAML (docs/cost-model.md); errors name the field. Re-loading the same file is a no-op."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args: Any, file: Path, **options: Any) -> None:
        try:
            text = decode_utf8(file.read_bytes(), name=str(file))
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc}") from exc
        except NotUtf8Error as exc:
            raise CommandError(f"{exc} Nothing was loaded.") from exc
        try:
            book, created = price_book_load(text=text)
        except ValidationError as exc:
            lines = [f"  {field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()]
            raise CommandError(f"{file} is not a valid price book:\n" + "\n".join(lines)) from exc
        verb = "Loaded" if created else "Already loaded"
        prices = ", ".join(
            f"{p.gpu_model} {p.hourly_rate.quantize(Decimal('0.0001'))}/h" for p in book.gpu_prices.all()
        )
        self.stdout.write(f"{verb} price book v{book.version}, in effect from {book.effective_from}: {prices}")
