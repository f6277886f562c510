from django.apps import AppConfig


class AllocationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "allocations"
    verbose_name = "GPU allocations"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from allocations.models import Cluster, GpuModel, MigProfileDefinition, NodePool, SlaTier
        from allocations.reference_cache import bump_reference_version

        # What catalog_from_db(), tiers_by_slug() and placement's candidate pools keep per process
        # (allocations.reference_cache).
        for model in (GpuModel, MigProfileDefinition, SlaTier, Cluster, NodePool):
            post_save.connect(bump_reference_version, sender=model, dispatch_uid=f"reference-version-{model.__name__}")
            post_delete.connect(
                bump_reference_version, sender=model, dispatch_uid=f"reference-version-del-{model.__name__}"
            )
