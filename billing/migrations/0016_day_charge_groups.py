import django.db.models.deletion
from django.db import migrations, models
from django.db.models import BooleanField, ExpressionWrapper, F, Q, Sum


def sum_stored_days(apps, schema_editor):
    """The days already stored get their group sums, as the pricing task writes them from now on."""
    DayCharge = apps.get_model("billing", "DayCharge")
    DayChargeGroup = apps.get_model("billing", "DayChargeGroup")
    imported = ExpressionWrapper(Q(imported__isnull=False), output_field=BooleanField())
    sums = (
        DayCharge.objects.values(
            "day",
            "team_id",
            "strategy",
            "gpu_model",
            "sla_tier",
            pool_id=F("request__node_pool_id"),
            is_import=imported,
        )
        .annotate(
            s_amount=Sum("amount"),
            s_dedicated=Sum("dedicated_amount"),
            s_base=Sum("base_amount"),
            s_hours=Sum("allocated_gpu_hours"),
        )
        .order_by()
    )
    DayChargeGroup.objects.bulk_create(
        (
            DayChargeGroup(
                day=row["day"],
                team_id=row["team_id"],
                node_pool_id=row["pool_id"],
                imported=row["is_import"],
                strategy=row["strategy"],
                gpu_model=row["gpu_model"],
                sla_tier=row["sla_tier"],
                amount=row["s_amount"],
                dedicated_amount=row["s_dedicated"],
                base_amount=row["s_base"],
                allocated_gpu_hours=row["s_hours"],
            )
            for row in sums.iterator()
        ),
        batch_size=2000,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0025_cluster_prometheus_recording_rules"),
        ("billing", "0015_stored_capacity_forecast"),
    ]

    operations = [
        migrations.CreateModel(
            name="DayChargeGroup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("day", models.DateField()),
                ("imported", models.BooleanField(default=False)),
                ("strategy", models.CharField(max_length=20)),
                ("gpu_model", models.CharField(max_length=100)),
                ("sla_tier", models.CharField(blank=True, max_length=50)),
                ("amount", models.DecimalField(decimal_places=12, max_digits=28)),
                ("dedicated_amount", models.DecimalField(decimal_places=12, max_digits=28)),
                ("base_amount", models.DecimalField(decimal_places=12, max_digits=28)),
                ("allocated_gpu_hours", models.DecimalField(decimal_places=12, max_digits=28)),
                (
                    "node_pool",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="allocations.nodepool",
                    ),
                ),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="allocations.team"
                    ),
                ),
            ],
            options={
                "indexes": [models.Index(fields=["day", "team"], name="billing_day_day_24fc66_idx")],
            },
        ),
        migrations.RunPython(sum_stored_days, migrations.RunPython.noop),
    ]
