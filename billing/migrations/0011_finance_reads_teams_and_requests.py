"""The Finance group reads every team and request (Django's view permissions), so report lines and charts open."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

FINANCE_GROUP = "Finance"
READ_PERMISSIONS = (("allocations", "view_team"), ("allocations", "view_gpurequest"))


def grant_finance_reads(apps, schema_editor):
    """Finance reads every team and request, read-only (allocations.view_team, allocations.view_gpurequest)."""
    # Permissions are normally created after migrate; create them now so the group can hold them.
    for app_config in apps.get_app_configs():
        original = getattr(app_config, "models_module", None)
        app_config.models_module = original or True
        try:
            create_permissions(app_config, apps=apps, verbosity=0)
        finally:
            app_config.models_module = original
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group, _ = Group.objects.get_or_create(name=FINANCE_GROUP)
    for app_label, codename in READ_PERMISSIONS:
        group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))


def revoke_finance_reads(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    group = Group.objects.filter(name=FINANCE_GROUP).first()
    if group is None:
        return
    for app_label, codename in READ_PERMISSIONS:
        group.permissions.remove(*Permission.objects.filter(content_type__app_label=app_label, codename=codename))


class Migration(migrations.Migration):
    dependencies = [
        ("billing", "0010_gpu_health_xid_codes_json"),
        ("allocations", "0013_gpurequest_base_manager"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(grant_finance_reads, revoke_finance_reads)]
