"""Browser routes of the API tokens page."""

from django.urls import path

from portal.tokens import views

app_name = "tokens"
urlpatterns = [
    path("account/tokens/", views.token_list, name="list"),
    path("account/tokens/<int:pk>/revoke/", views.token_revoke, name="revoke"),
]
