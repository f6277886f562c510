from django.apps import AppConfig


class BillingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "billing"
    verbose_name = "Billing and utilization"

    def ready(self) -> None:
        from billing.api.scoping import register_billing_visibility

        register_billing_visibility()
