# Hand-written (AddField only) so that it carries nothing but the utilization alert inputs.

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0002_cost_price_books_reports"),
    ]

    operations = [
        migrations.AddField(
            model_name="utilizationrollup",
            name="max_temperature_c",
            field=models.FloatField(blank=True, help_text="Hottest DCGM_FI_DEV_GPU_TEMP minute.", null=True),
        ),
        migrations.AddField(
            model_name="utilizationrollup",
            name="memory_pressure_minutes",
            field=models.PositiveSmallIntegerField(
                blank=True,
                help_text="Minutes with FB_USED / (FB_USED + FB_FREE) > 0.85 at it and the one before.",
                null=True,
            ),
        ),
    ]
