from django.apps import AppConfig


class TokensConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "portal.tokens"
    label = "tokens"
    verbose_name = "API tokens"

    def ready(self) -> None:
        from infra.scoping import register_visibility
        from portal.tokens.models import ApiToken
        from portal.tokens.services import api_tokens_of

        register_visibility(ApiToken, api_tokens_of)
