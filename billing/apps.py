from django.apps import AppConfig


class BillingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "billing"
    verbose_name = "Billing and utilization"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from allocations.reference_cache import bump_reference_version
        from billing.models import GpuPrice, PriceBook

        # current_gpu_rates() keeps every book's rates per process (allocations.reference_cache): a change rereads.
        for model in (PriceBook, GpuPrice):
            post_save.connect(bump_reference_version, sender=model, dispatch_uid=f"reference-version-{model.__name__}")
            post_delete.connect(
                bump_reference_version, sender=model, dispatch_uid=f"reference-version-del-{model.__name__}"
            )
