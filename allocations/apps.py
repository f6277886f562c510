from django.apps import AppConfig


class AllocationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "allocations"
    verbose_name = "GPU allocations"

    def ready(self) -> None:
        from allocations.api.scoping import register_allocations_visibility

        register_allocations_visibility()
