"""Seed the three SLA tiers of the design, the GPU catalog from the reference data, and the approvers group.

The rows come from the pure modules (``gpucore.sla.DEFAULT_TIERS`` and
``gpucore.catalog.BUILTIN_CATALOG``), so the seed and the framework's defaults cannot drift apart.
Existing rows are updated in place, never duplicated.
"""

from django.contrib.auth.management import create_permissions
from django.db import migrations

APPROVERS_GROUP = "Platform approvers"


def seed_tiers(apps, schema_editor):
    from gpucore.sla import DEFAULT_TIERS

    SlaTier = apps.get_model("allocations", "SlaTier")
    for tier in DEFAULT_TIERS:
        SlaTier.objects.update_or_create(
            slug=tier.slug,
            defaults={
                "name": tier.name,
                "description": tier.description,
                "latency_p99_ms": tier.latency_p99_ms,
                "availability_pct": tier.availability_pct,
                "isolation_floor": tier.isolation_floor.value,
                "priority_class_name": tier.priority_class_name,
                "priority_value": tier.priority_value,
                "preemptible": tier.preemptible,
                "price_multiplier": tier.price_multiplier,
                "default_time_slice_replicas": tier.default_time_slice_replicas,
            },
        )


def seed_catalog(apps, schema_editor):
    from gpucore.catalog import BUILTIN_CATALOG

    GpuModel = apps.get_model("allocations", "GpuModel")
    MigProfileDefinition = apps.get_model("allocations", "MigProfileDefinition")
    for spec in BUILTIN_CATALOG:
        model, _ = GpuModel.objects.update_or_create(
            name=spec.name,
            defaults={
                "family": spec.family,
                "memory_gb": spec.memory_gb,
                "product_label": spec.product_label,
                "mig_capable": spec.mig_capable,
                "mig_compute_slices": spec.mig_compute_slices,
                "mig_memory_slices": spec.mig_memory_slices,
                "tdp_watts": spec.tdp_watts,
                "purchase_price": spec.purchase_price_usd,
                "list_hourly_price": spec.list_hourly_usd,
                "dcgm_model_names": list(spec.dcgm_model_names),
                "aliases": list(spec.aliases),
                "notes": spec.notes,
            },
        )
        for profile in spec.mig_profiles:
            MigProfileDefinition.objects.update_or_create(
                gpu_model=model,
                name=profile.name,
                defaults={
                    "memory_gb": profile.memory_gb,
                    "compute_slices": profile.compute_slices,
                    "memory_slices": profile.memory_slices,
                    "max_instances": profile.max_instances,
                    "placement_starts": list(profile.placement_starts),
                    "recommendable": profile.recommendable,
                },
            )


def seed_approvers_group(apps, schema_editor):
    # Permissions are normally created after migrate; create them now so the group can hold one.
    for app_config in apps.get_app_configs():
        original = getattr(app_config, "models_module", None)
        app_config.models_module = original or True
        try:
            create_permissions(app_config, apps=apps, verbosity=0)
        finally:
            app_config.models_module = original
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=APPROVERS_GROUP)
    permission = Permission.objects.get(content_type__app_label="allocations", codename="approve_gpurequest")
    group.permissions.add(permission)


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [
        migrations.RunPython(seed_tiers, migrations.RunPython.noop),
        migrations.RunPython(seed_catalog, migrations.RunPython.noop),
        migrations.RunPython(seed_approvers_group, migrations.RunPython.noop),
    ]
