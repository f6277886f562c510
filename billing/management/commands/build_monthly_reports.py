"""``manage.py build_monthly_reports --month YYYY-MM``: close a finished month's reports on demand (idempotent)."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from billing.costs.services import monthly_reports_close, previous_month
from gpucore.months import MonthError, parse_month


def _month(value: str) -> date:
    try:
        return parse_month(value)
    except MonthError as exc:
        raise CommandError(f"--month: {exc}") from exc


class Command(BaseCommand):
    help = "Close a month's chargeback reports (default: last month); closed reports are never recomputed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--month", help="YYYY-MM (default: the previous month)")
        parser.add_argument("--no-email", action="store_true", help="Do not email the reports.")

    def handle(self, *args: Any, month: str | None = None, no_email: bool = False, **options: Any) -> None:
        target = _month(month) if month else previous_month()
        try:
            result = monthly_reports_close(month=target, send_email=not no_email)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc
        self.stdout.write(
            f"{target:%Y-%m}: {len(result.created)} reports closed, {len(result.already_closed)} already closed, "
            f"{len(result.failed)} failed."
        )
        for team, error in result.failed.items():
            self.stderr.write(f"  {team}: {error}")
        if result.failed:
            raise CommandError("Some teams could not be closed; re-run after fixing them (closed ones are kept).")
