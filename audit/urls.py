"""Browser route of the audit page."""

from django.urls import path

from audit import views

app_name = "audit"
urlpatterns = [path("audit/", views.audit_event_list, name="event-list")]
