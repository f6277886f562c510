"""The daily and monthly totals keep the peak of GPU memory used, so the usage API answers from them alone."""

from datetime import timedelta

from django.db import migrations, models
from django.db.models import Max, Min


def backfill_peak_memory(apps, schema_editor):
    """Recompute the totals of the rollups stored so far (they now carry the peak memory); later writes keep them."""
    # The refresh is raw SQL over the tables, so the current code is safe to run against this migration's state.
    from billing.metering.aggregates import refresh_usage_aggregates

    rollups = apps.get_model("billing", "UtilizationRollup").objects
    for row in rollups.values("cluster_id").annotate(first=Min("hour"), last=Max("hour")).order_by():
        refresh_usage_aggregates(cluster_id=row["cluster_id"], start=row["first"], end=row["last"] + timedelta(hours=1))


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0012_partition_hourly_tables_by_month"),
    ]

    operations = [
        migrations.AddField(
            model_name="dailyusage",
            name="peak_memory_mib",
            field=models.FloatField(help_text="The largest hourly peak of GPU memory used (MiB).", null=True),
        ),
        migrations.AddField(
            model_name="monthlyusage",
            name="peak_memory_mib",
            field=models.FloatField(help_text="The largest hourly peak of GPU memory used (MiB).", null=True),
        ),
        migrations.RunPython(backfill_peak_memory, migrations.RunPython.noop, elidable=True),
    ]
