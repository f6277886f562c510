"""Browser routes of the allocations app."""

from django.urls import path

from allocations.approvals import views as approval_views
from allocations.clusters import views as cluster_views
from allocations.clusters import workload_views
from allocations.mig_plans import views as mig_views
from allocations.quota_requests import views as quota_views
from allocations.request_templates import views as template_views
from allocations.requests import extension_views, list_views, search_views
from allocations.requests import views as request_views
from allocations.reservations import views as reservation_views
from allocations.teams import member_picker
from allocations.teams import views as team_views

app_name = "allocations"
urlpatterns = [
    path("search/", search_views.search, name="search"),
    path("requests/", request_views.request_list, name="request-list"),
    path("requests/export.csv", list_views.request_list_export, name="request-list-export"),
    path("requests/columns/", list_views.request_list_columns_save, name="request-list-columns"),
    path("requests/bulk/", list_views.request_list_bulk, name="request-list-bulk"),
    path("requests/new/", request_views.request_new, name="request-new"),
    path("requests/preview/", request_views.request_preview, name="request-preview"),
    path("requests/<int:pk>/", request_views.request_detail, name="request-detail"),
    path("requests/<int:pk>/cancel/", request_views.request_cancel, name="request-cancel"),
    path("requests/<int:pk>/release/", request_views.request_release, name="request-release"),
    path("requests/<int:pk>/reapply/", request_views.request_reapply, name="request-reapply"),
    path("requests/<int:pk>/resume/", request_views.request_resume, name="request-resume"),
    path("requests/<int:pk>/keep/", request_views.request_keep, name="request-keep"),
    path("requests/<int:pk>/extend/", extension_views.request_extend, name="request-extend"),
    path("requests/<int:pk>/save-template/", template_views.template_from_request, name="request-save-template"),
    path("templates/", template_views.template_list, name="template-list"),
    path("templates/new/", template_views.template_new, name="template-new"),
    path("templates/<int:pk>/edit/", template_views.template_edit, name="template-edit"),
    path("templates/<int:pk>/delete/", template_views.template_delete, name="template-delete"),
    path("requests/<int:pk>/status/", request_views.request_status, name="request-status"),
    path("requests/<int:pk>/workload/", workload_views.request_workload, name="request-workload"),
    path("requests/<int:pk>/manifests.yaml", request_views.request_manifests_download, name="request-manifests"),
    path("approvals/", approval_views.approval_list, name="approvals"),
    path("approvals/bulk/", approval_views.approval_bulk, name="approval-bulk"),
    path("approvals/<int:pk>/", approval_views.approval_review, name="approval-review"),
    path("approvals/extensions/<int:pk>/", extension_views.extension_review, name="extension-review"),
    path("teams/", team_views.team_list, name="team-list"),
    path("teams/<slug:slug>/", team_views.team_detail, name="team-detail"),
    path("teams/<slug:slug>/members/", team_views.team_member_add_view, name="team-member-add"),
    path("teams/<slug:slug>/members/candidates/", member_picker.team_member_candidates, name="team-member-candidates"),
    path("teams/<slug:slug>/members/<int:user_id>/role/", team_views.team_member_role_view, name="team-member-role"),
    path(
        "teams/<slug:slug>/members/<int:user_id>/remove/", team_views.team_member_remove_view, name="team-member-remove"
    ),
    path("quotas/", quota_views.quota_list, name="quota-list"),
    path("quotas/<int:pk>/", quota_views.quota_edit, name="quota-edit"),
    path("quotas/<int:pk>/increase/", quota_views.quota_increase_new, name="quota-increase-new"),
    path("quotas/increases/<int:pk>/decide/", quota_views.quota_increase_decision, name="quota-increase-decide"),
    path("reservations/", reservation_views.reservation_list, name="reservation-list"),
    path("reservations/<int:pk>/decide/", reservation_views.reservation_decision, name="reservation-decide"),
    path("reservations/<int:pk>/cancel/", reservation_views.reservation_cancel_view, name="reservation-cancel"),
    path("clusters/", cluster_views.cluster_list, name="cluster-list"),
    path("clusters/<slug:name>/", cluster_views.cluster_detail, name="cluster-detail"),
    path("clusters/<slug:name>/sync/", cluster_views.cluster_sync, name="cluster-sync"),
    path("clusters/<slug:name>/pools/<slug:pool>/mig/", mig_views.mig_pool, name="mig-pool"),
    path(
        "clusters/<slug:name>/pools/<slug:pool>/mig/<int:pk>/<slug:action>/",
        mig_views.mig_plan_action,
        name="mig-plan-action",
    ),
]
