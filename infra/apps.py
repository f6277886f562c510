from django.apps import AppConfig


class InfraConfig(AppConfig):
    name = "infra"
    verbose_name = "Infrastructure"

    def ready(self) -> None:
        from infra.reference_cache import connect_signals

        connect_signals()
