from django.apps import AppConfig


class AllocationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "allocations"
    verbose_name = "GPU allocations"
