from django.apps import AppConfig


class BillingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "billing"
    verbose_name = "Billing and utilization"

    def ready(self) -> None:
        from billing.api.scoping import register_billing_visibility
        from billing.costs.day_charges import connect_day_charge_receivers
        from billing.utilization.request_list_values import register_request_list_values

        register_billing_visibility()
        connect_day_charge_receivers()
        register_request_list_values()

        from allocations.clusters.queue_observation import request_preempted
        from allocations.notifications import quota_increase_decided
        from billing.reclaim.notices import notify_preempted, post_quota_decision

        request_preempted.connect(notify_preempted, dispatch_uid="billing.notify_preempted")
        quota_increase_decided.connect(post_quota_decision, dispatch_uid="billing.post_quota_decision")
