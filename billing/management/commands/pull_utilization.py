"""``manage.py pull_utilization --cluster NAME [--start ISO] [--end ISO]``: read DCGM utilization into rollups."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from allocations.models import Cluster
from billing.metering.alert_inputs import utilization_health_pull
from billing.metering.gpu_health import gpu_health_pull
from billing.metering.prometheus import PrometheusError
from billing.metering.services import (
    HOUR,
    floor_hour,
    last_complete_hour_end,
    utilization_pull,
)


def _aware(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{value!r} is not an ISO 8601 time (e.g. 2026-11-01T00:00:00Z).") from None
    # A time without an offset is read as UTC: data is stored in UTC, never guessed from the server's zone.
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


class Command(BaseCommand):
    help = "Pull hourly GPU utilization rollups from a cluster's Prometheus (default: catch up from the watermark)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cluster", required=True, help="Cluster name.")
        parser.add_argument("--start", help="First hour to read (ISO 8601, UTC if no offset).")
        parser.add_argument("--end", help="End of the range, exclusive (default: last complete hour).")

    def handle(self, *args: Any, **options: Any) -> None:
        cluster = Cluster.objects.filter(name=options["cluster"]).first()
        if cluster is None:
            raise CommandError(f"No cluster named {options['cluster']!r}.")
        if not cluster.prometheus_url:
            raise CommandError(f"Cluster {cluster.name} has no Prometheus URL.")
        # Parsed here, not by argparse: call_command() passes keyword options through unconverted.
        start = _aware(options["start"]) if options["start"] else None
        end = _aware(options["end"]) if options["end"] else None
        if start and end and end <= start:
            raise CommandError("--end must be after --start.")
        total = None
        if start is not None:
            stop = end or last_complete_hour_end(datetime.now(UTC))
            total = max(0, int((stop - floor_hour(start)) / HOUR))
        with tqdm(total=total, unit="h", desc=cluster.name, disable=None) as bar:
            try:
                result = utilization_pull(
                    cluster=cluster, start=start, end=end, max_hours=total or None, progress=bar.update
                )
            except PrometheusError as exc:
                raise CommandError(f"Prometheus error: {exc}") from exc
        # The hours just read: from --start, or up to the watermark when catching up.
        first = floor_hour(start) if start is not None else None
        if first is None and result.watermark is not None:
            first = result.watermark + HOUR - result.hours * HOUR
        if result.hours and first is not None:
            last = first + result.hours * HOUR
            try:
                utilization_health_pull(cluster=cluster, start=first, end=last)
                gpu_health_pull(cluster=cluster, start=first, end=last)
            except PrometheusError as exc:
                raise CommandError(f"Prometheus error (alert inputs and GPU faults): {exc}") from exc
        mark = result.watermark.isoformat() if result.watermark else "none"
        self.stdout.write(f"{result.hours} hours, {result.rows} rollup rows; watermark {mark}")
