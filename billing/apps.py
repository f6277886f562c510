from django.apps import AppConfig


class BillingConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "billing"
    verbose_name = "Billing and utilization"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from allocations.reference_cache import bump_reference_version
        from billing.models import GpuPrice, PriceBook, TeamBudget

        # current_gpu_rates() keeps every book's rates per process, budgets_by_team() every team's budget
        # (allocations.reference_cache): a change rereads.
        for model in (PriceBook, GpuPrice, TeamBudget):
            post_save.connect(bump_reference_version, sender=model, dispatch_uid=f"reference-version-{model.__name__}")
            post_delete.connect(
                bump_reference_version, sender=model, dispatch_uid=f"reference-version-del-{model.__name__}"
            )

        from allocations.models import (
            Cluster,
            GpuModel,
            GpuRequest,
            MigProfileDefinition,
            NodePool,
            RequestEvent,
            SlaTier,
            Team,
        )
        from billing.costs.month_to_date import pricing_inputs_changed, team_inputs_changed
        from billing.metering.rollups_version import rollups_changed
        from billing.models import ImportedUsage, SlaMultiplier, UtilizationRollup

        # The fleet alerts each process keeps (billing.metering.rollups_version): a rollup saved one by one (the
        # admin, tests) rereads them; bulk writers replace the token themselves. No post_delete receiver on rollups:
        # it would make every bulk delete of rollups load each row to send it (deleters call
        # refresh_usage_aggregates); deleting a cluster, team or request (which cascades to or names rollups) does.
        post_save.connect(rollups_changed, sender=UtilizationRollup, dispatch_uid="rollups-version")
        for model in (Cluster, Team, GpuRequest):
            post_delete.connect(rollups_changed, sender=model, dispatch_uid=f"rollups-version-del-{model.__name__}")
        # The month-to-date curves each process keeps (billing.costs.month_to_date): a team's rebuild when its
        # requests, their events or its imported usage change; everyone's when what prices allocations changes.
        for model in (GpuRequest, RequestEvent, ImportedUsage):
            post_save.connect(team_inputs_changed, sender=model, dispatch_uid=f"month-to-date-{model.__name__}")
            post_delete.connect(team_inputs_changed, sender=model, dispatch_uid=f"month-to-date-del-{model.__name__}")
        for model in (
            PriceBook,
            GpuPrice,
            SlaMultiplier,
            SlaTier,
            GpuModel,
            MigProfileDefinition,
            Cluster,
            NodePool,
            Team,
        ):
            post_save.connect(pricing_inputs_changed, sender=model, dispatch_uid=f"month-to-date-{model.__name__}")
            post_delete.connect(
                pricing_inputs_changed, sender=model, dispatch_uid=f"month-to-date-del-{model.__name__}"
            )
