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
            ],
        ),
        migrations.AddIndex(
            model_name="daycharge",
            index=models.Index(fields=["request", "day"], name="billing_day_request_eb76b4_idx"),
        ),
        migrations.AddIndex(
            model_name="monthlyreportline",
            index=models.Index(fields=["request_ref", "report"], name="billing_mon_request_5f936e_idx"),
        ),
        migrations.AddField(
            model_name="monthrequestcharge",
            name="imported",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="billing.importedusage"
            ),
        ),
        migrations.AddField(
            model_name="monthrequestcharge",
            name="node_pool",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="allocations.nodepool"
            ),
        ),
        migrations.AddField(
            model_name="monthrequestcharge",
            name="request",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+", to="allocations.gpurequest"
            ),
        ),
        migrations.AddField(
            model_name="monthrequestcharge",
            name="team",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="allocations.team"
            ),
        ),
        migrations.AddIndex(
            model_name="monthrequestcharge",
            index=models.Index(fields=["month", "through", "request"], name="billing_mon_month_129601_idx"),
        ),
    ]
