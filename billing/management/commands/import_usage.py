"""``manage.py import_usage FILE.csv``: load historical allocations, all rows or none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.costs.services import USAGE_HEADER, usage_import
from gpucore.textfiles import NotUtf8Error, decode_utf8


class Command(BaseCommand):
    help = f"Import historical GPU usage from CSV with the header {','.join(USAGE_HEADER)}."

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
            count = usage_import(csv_text=text, source_name=file.name)
        except ValidationError as exc:
            problems = [message for messages in exc.message_dict.values() for message in messages]
            raise CommandError(f"{file}: nothing imported.\n" + "\n".join(f"  {p}" for p in problems)) from exc
        self.stdout.write(f"Imported {count} rows from {file}.")
