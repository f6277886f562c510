import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0025_cluster_prometheus_recording_rules"),
        ("billing", "0016_day_charge_groups"),
    ]

    operations = [
        migrations.CreateModel(
            name="MonthRequestCharge",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("month", models.DateField()),
                ("through", models.DateField(help_text="The day after the last day summed.")),
                ("name", models.CharField(max_length=200)),
                ("strategy", models.CharField(max_length=20)),
                ("gpu_model", models.CharField(max_length=100)),
                ("sla_tier", models.CharField(blank=True, max_length=50)),
                ("amount", models.DecimalField(decimal_places=12, max_digits=28)),
                ("dedicated_amount", models.DecimalField(decimal_places=12, max_digits=28)),
                ("allocated_gpu_hours", models.DecimalField(decimal_places=12, max_digits=28)),
                (
                    "imported",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="billing.importedusage",
                    ),
                ),
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
                    "request",
                    models.ForeignKey(
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="allocations.gpurequest",
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
                "indexes": [models.Index(fields=["month", "through", "team"], name="billing_mon_month_526300_idx")],
            },
        ),
    ]
