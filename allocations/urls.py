"""Browser routes of the allocations app."""

from django.urls import path

from allocations import views

app_name = "allocations"
urlpatterns = [
    path("requests/", views.request_list, name="request-list"),
    path("requests/new/", views.request_new, name="request-new"),
    path("requests/<int:pk>/", views.request_detail, name="request-detail"),
    path("requests/<int:pk>/cancel/", views.request_cancel, name="request-cancel"),
    path("requests/<int:pk>/release/", views.request_release, name="request-release"),
    path("approvals/", views.approval_list, name="approvals"),
    path("approvals/bulk/", views.approval_bulk, name="approval-bulk"),
    path("approvals/<int:pk>/", views.approval_review, name="approval-review"),
    path("teams/<slug:slug>/", views.team_detail, name="team-detail"),
    path("account/tokens/", views.api_tokens, name="tokens"),
]
