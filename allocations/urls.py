"""Browser routes of the allocations app."""

from django.urls import path  # noqa: F401

app_name = "allocations"
urlpatterns: list = []
