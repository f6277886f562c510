"""``manage.py import_usage FILE.csv``: load historical allocations, all rows or none, streamed from the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.costs.services import USAGE_HEADER, usage_import
from gpucore.textfiles import NotUtf8Error, iter_utf8_lines


class Command(BaseCommand):
    help = f"Import historical GPU usage from CSV with the header {','.join(USAGE_HEADER)}."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)

    def handle(self, *args: Any, file: Path, **options: Any) -> None:
        try:
            # Read a line at a time (bounded memory): a UTF-8 error half-way aborts the import's transaction.
            with file.open("rb") as handle:
                count = usage_import(lines=iter_utf8_lines(handle, name=str(file)), source_name=file.name)
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc}") from exc
        except NotUtf8Error as exc:
            raise CommandError(f"{exc} Nothing was loaded.") from exc
        except ValidationError as exc:
            problems = [message for messages in exc.message_dict.values() for message in messages]
            raise CommandError(f"{file}: nothing imported.\n" + "\n".join(f"  {p}" for p in problems)) from exc
        self.stdout.write(f"Imported {count} rows from {file}.")
