"""Browser pages of GPU requests: the new-request form and its live preview, the list, a request's page with its
status refresh and manifests download, and the requester's actions (cancel, release, reapply)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import BadRequest, PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_POST

from allocations.clusters.placement import place
from allocations.clusters.workloads import ON_CLUSTER_STATUSES, gpu_request_access, gpu_request_workload_unread
from allocations.lifecycle import InvalidTransition
from allocations.models import CANCELLABLE_STATUSES, RELEASABLE_STATUSES, GpuRequest, RequestStatus, RequestTemplate
from allocations.quota_requests.selectors import quota_next_steps
from allocations.reference_data import catalog_from_db, tiers_by_slug
from allocations.request_templates.selectors import request_template_form_initial, request_templates_offered
from allocations.requests.form_submissions import form_submission_claim, form_submission_done
from allocations.requests.forms import CommentForm, GpuRequestForm, RecommendationPreviewForm
from allocations.requests.list_columns import attach_batch_values, column_choices, header_cells
from allocations.requests.list_views import request_list_rows
from allocations.requests.pages import (
    gpu_request_actions,
    gpu_request_clone_initial,
    gpu_request_extension_rows,
    gpu_request_live_status,
    gpu_request_manifests_yaml,
)
from allocations.requests.reclaim_services import gpu_request_keep, gpu_request_resume
from allocations.requests.run_time import request_run_time
from allocations.requests.services import (
    gpu_request_cancel,
    gpu_request_reapply,
    gpu_request_release,
    gpu_request_submit,
)
from allocations.requests.waiting import last_preemption, request_waiting
from allocations.selectors import teams_of, user_reads_every_team
from allocations.view_helpers import error_text, require_platform_admin, visible_request
from gpucore.decision import ProfileError, WorkloadProfile
from infra.pagination import BoundedCountPaginator

PAGE_SIZE = 25
# The request page's one-click extension asks for this many more hours (the full form takes any number up to 720).
QUICK_EXTENSION_HOURS = 24


@login_required
def request_new(request: HttpRequest) -> HttpResponse:
    """Describe a workload, preview the recommendation live, and submit the request for approval."""
    initial = {**_initial_from_query(request), "submission_token": uuid.uuid4()}
    if request.method == "GET" and request.GET.get("from"):
        initial.update(_clone_initial(request))
    chosen_template = None
    if request.method == "GET" and request.GET.get("template"):
        chosen_template = _template_initial(request, initial)
    form = GpuRequestForm(request.POST or None, user=request.user, initial=initial)
    if request.method == "POST" and form.is_valid():
        token = str(form.cleaned_data.get("submission_token") or "")
        earlier = form_submission_claim(acting_user=request.user, token=token) if token else None
        if earlier is not None:
            # The same page posted again (a double click, a reload, a replay): no second request.
            if earlier:
                messages.info(
                    request, f"This form was already submitted as request #{earlier}.", extra_tags="request-submitted"
                )
                return redirect("allocations:request-detail", pk=earlier)
            messages.info(request, "This form is already being submitted; your requests are listed here.")
            return redirect("allocations:request-list")
        try:
            gpu_request = gpu_request_submit(acting_user=request.user, **form.service_kwargs())
        except ValidationError as exc:
            if token:
                form_submission_done(acting_user=request.user, token=token, request_id=None)
            form.add_service_errors(exc)
        else:
            if token:
                form_submission_done(acting_user=request.user, token=token, request_id=gpu_request.pk)
            messages.success(
                request,
                f"Request #{gpu_request.pk} “{gpu_request.name}” was submitted: "
                f"{gpu_request.get_status_display().lower()}.",
                extra_tags="request-submitted",  # the page clears the browser's saved draft of the form
            )
            return redirect("allocations:request-detail", pk=gpu_request.pk)
    status = 400 if request.method == "POST" else 200
    context = {
        "form": form,
        "has_teams": form.fields["team"].queryset.exists(),
        "templates": list(request_templates_offered(user=request.user)),
        "chosen_template": chosen_template,
        "quota_steps": _quota_next_steps(request, form),
        # The browser's saved draft fills a fresh form only: not one re-rendered with errors, cloned or templated.
        "draft_mode": "restore" if request.method == "GET" and not set(request.GET) & {"from", "template"} else "keep",
    }
    return render(request, "allocations/request_form.html", context, status=status)


@login_required
@require_POST
def request_preview(request: HttpRequest) -> HttpResponse:
    """The new-request page's live preview: the recommendation as the ``_spec.html`` fragment, or the field errors.

    The same template renders the spec frozen on a request's page, so the preview and the request never drift. The
    team must be one of the user's (the form's choices); CSRF is checked as for any POST (the header the page sends).
    """
    form = RecommendationPreviewForm(request.POST, user=request.user)
    errors: dict[str, list[str]] = {}
    if form.is_valid():
        try:
            profile = WorkloadProfile.from_mapping(form.profile_data())
            placement = place(profile, cluster=form.cleaned_data.get("cluster"))
        except ProfileError as exc:
            errors = {name: list(messages) for name, messages in exc.errors.items()}
        else:
            # budget_team: the preview (not a request's page) shows the team's money budget with this request in it.
            context = {
                "spec": placement.spec,
                "budget_team": form.cleaned_data["team"],
                "memory_note": _memory_per_replica_note(profile, placement.spec),
            }
            return render(request, "allocations/_spec.html", context)
    else:
        errors = {name: list(messages) for name, messages in form.errors.items()}
    rows = [
        {
            "field": name,
            "label": form.fields[name].label or name.replace("_", " ").capitalize() if name in form.fields else "",
            "messages": messages,
        }
        for name, messages in errors.items()
    ]
    return render(request, "allocations/_preview_errors.html", {"errors": rows}, status=400)


def _memory_per_replica_note(profile: WorkloadProfile, spec: dict[str, object]) -> str:
    """A check of the unit the user meant: memory is per replica, spread over its GPUs. When one GPU of the chosen
    model would hold a multi-GPU replica's whole figure, the figure was likely typed per GPU; say what it means."""
    count = profile.gpu_count
    gpu_gb = next((model.memory_gb for model in catalog_from_db() if model.name == spec.get("gpu_model")), None)
    if count <= 1 or gpu_gb is None or profile.gpu_memory_gb > gpu_gb:
        return ""
    total = profile.gpu_memory_gb
    return (
        f"{total:g} GiB is the whole replica's peak: {total / count:g} GiB on each of its {count} GPUs. "
        f"If each GPU needs {total:g} GiB, enter {total * count:g} GiB."
    )


def _clone_initial(request: HttpRequest) -> dict[str, object]:
    """``?from=<id>``: the form pre-filled from that request; 404 for a request the user may not see."""
    source = request.GET["from"]
    if not source.isdigit():
        raise BadRequest(f"from: Give a request id, not {source!r}.")
    try:
        initial = gpu_request_clone_initial(user=request.user, pk=int(source))
    except GpuRequest.DoesNotExist as exc:
        raise Http404("No such request in your teams.") from exc
    messages.info(request, f"Pre-filled from request #{source}: check the values, then submit.")
    return initial


def _quota_next_steps(request: HttpRequest, form: GpuRequestForm) -> dict[str, object] | None:
    """After a quota refusal: the quota, whether the user may ask for more (and how many), borrow, or wait."""
    if form.quota_refusal is None:
        return None
    quota_id, shortfall = form.quota_refusal
    steps = quota_next_steps(user=request.user, quota_id=quota_id)
    if steps is None:
        return None
    tier = form.cleaned_data.get("sla_tier")
    return {
        "steps": steps,
        "shortfall": shortfall,
        "borrow": steps.borrowing_limit > 0 and not (tier and tier.preemptible),
    }


def _template_initial(request: HttpRequest, initial: dict[str, object]) -> RequestTemplate:
    """``?template=<id>``: the form pre-filled from a template offered to the user; 404 for any other."""
    source = request.GET["template"]
    template = request_templates_offered(user=request.user).filter(pk=int(source)).first() if source.isdigit() else None
    if template is None:
        raise Http404("No such template among those offered to your teams.")
    initial.update(request_template_form_initial(template))
    return template


def _initial_from_query(request: HttpRequest) -> dict[str, str]:
    """Prefill the form from ?team=slug (links from a team page)."""
    team = request.GET.get("team")
    return {"team": team} if team else {}


@login_required
def request_list(request: HttpRequest) -> HttpResponse:
    """The requests of the user's teams (all teams for approvers), filtered, searched, sorted and paginated, in the
    columns the user chose."""
    user = request.user
    listed = request_list_rows(request)
    page = BoundedCountPaginator(listed.rows, PAGE_SIZE, count_with_page=True).get_page(request.GET.get("page"))
    attach_batch_values(page.object_list, listed.shown)
    query = request.GET.copy()
    query.pop("page", None)
    filterset = listed.filterset
    context = {
        "chosen": {name: filterset.form[name].value() for name in filterset.form.fields},
        "filter_errors": filterset.errors,
        "page": page,
        "mine": listed.mine,
        "filtered": any(value for key, value in request.GET.items() if key not in ("page", "sort")),
        "querystring": query.urlencode(),
        "columns": header_cells(
            listed.shown, sort=listed.sort, query=[(name, value) for name, values in query.lists() for value in values]
        ),
        "shown": dict.fromkeys(listed.shown, True),
        "column_choices": column_choices(listed.shown),
        "now": timezone.now(),
        "bulk_statuses": {"cancel": CANCELLABLE_STATUSES, "release": RELEASABLE_STATUSES},
        "status_options": RequestStatus.choices,
        "team_options": listed.teams,
        # The SLA tiers of the filter, from the reference data kept per process.
        "tier_options": [(tier.slug, tier.name) for tier in tiers_by_slug().values()],
        # Read only when the list is empty (the template's last branches).
        "has_teams": lambda: teams_of(user).exists() or user_reads_every_team(user),
    }
    # The rows are Jinja2 (autoescaped): the Django template language was most of this page's time.
    context["rows_html"] = mark_safe(  # noqa: S308 (a Jinja2 template's autoescaped output)
        render_to_string(
            "allocations/request_list_rows.html",
            {
                "rows": page.object_list,
                "shown": context["shown"],
                "user_id": user.pk,
                "now": context["now"],
                "bulk_statuses": context["bulk_statuses"],
            },
            using="jinja2",
        )
    )
    return render(request, "allocations/request_list.html", context)


@login_required
def request_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One request: profile, frozen spec, live cluster status with fixes, manifests, timeline, and the actions."""
    gpu_request = visible_request(request, pk, with_events=True)
    context = {
        "gpu_request": gpu_request,
        # Read through gpu_requests_visible_to for this user: billing's panels on the page need not read it again.
        "visible_request": gpu_request,
        "spec": gpu_request.spec or {},
        "events": gpu_request.events.all(),
        "actions": gpu_request_actions(user=request.user, request=gpu_request, role=gpu_request.viewer_role),
        "comment_form": CommentForm(),
        "extension_rows": gpu_request_extension_rows(user=request.user, request=gpu_request),
        "live": gpu_request_live_status(request=gpu_request),
        "waiting": request_waiting(gpu_request),
        "run_time": request_run_time(gpu_request, gpu_request.events.all()),
        "preemption": last_preemption(gpu_request.events.all()),
        "manifests_yaml": gpu_request_manifests_yaml(request=gpu_request),
    }
    if gpu_request.status in ON_CLUSTER_STATUSES:
        context["access"] = gpu_request_access(request=gpu_request)
        # Never a cluster call while the page renders (a slow API server would hold a worker for its timeout): the
        # "Use it" card reads the pods and events from the workload endpoint once the page is shown.
        context["workload"] = gpu_request_workload_unread(request=gpu_request)
        context["now"] = timezone.now()
        context["quick_extension_hours"] = QUICK_EXTENSION_HOURS
    return render(request, "allocations/request_detail.html", context)


@login_required
@require_GET
def request_status(request: HttpRequest, pk: int) -> JsonResponse:
    """The request's live status as JSON for the detail page's refresh: fields, the rendered panel, the manifests."""
    gpu_request = visible_request(request, pk)
    live = gpu_request_live_status(request=gpu_request)
    html = render_to_string("allocations/_live_status.html", {"live": live, "gpu_request": gpu_request}, request)
    observed_at = live["observed_at"]
    rendered_at = live["manifests_rendered_at"]
    return JsonResponse(
        {
            "id": gpu_request.pk,
            "status": live["status"],
            "status_display": live["status_display"],
            "observed_phase": live["observed_phase"],
            "observed_at": observed_at.isoformat() if observed_at else None,
            "status_detail": live["status_detail"],
            "hints": [{"code": h.code, "title": h.title, "fixes": list(h.fixes)} for h in live["hints"]],
            "manifests_rendered_at": rendered_at.isoformat() if rendered_at else None,
            "manifest_count": live["manifest_count"],
            "manifests_yaml": gpu_request_manifests_yaml(request=gpu_request),
            "polling": live["polling"],
            "html": html,
        }
    )


@login_required
@require_GET
def request_manifests_download(request: HttpRequest, pk: int) -> HttpResponse:
    """The request's rendered objects as ``gpr-<id>.yaml``, ready for ``kubectl apply -f``; 404 before rendering."""
    gpu_request = visible_request(request, pk)
    text = gpu_request_manifests_yaml(request=gpu_request)
    if not text:
        raise Http404("The manifests of this request are not rendered yet: they are rendered once it is approved.")
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{gpu_request.workload_object_name}.yaml"'
    return response


def _act_on_request(request: HttpRequest, pk: int, service: Callable[..., GpuRequest], done: str) -> HttpResponse:
    """Run a user action (cancel, release) through its service and come back to the detail page with a message."""
    gpu_request = visible_request(request, pk)
    form = CommentForm(request.POST)
    comment = form.cleaned_data["comment"] if form.is_valid() else ""
    try:
        service(request=gpu_request, acting_user=request.user, comment=comment)
    except PermissionDenied:
        raise
    except (ValidationError, InvalidTransition) as exc:
        messages.error(request, error_text(exc))
    else:
        messages.success(request, f"Request #{gpu_request.pk} {done}.")
    return redirect("allocations:request-detail", pk=pk)


@login_required
@require_POST
def request_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Withdraw a pending request."""
    return _act_on_request(request, pk, gpu_request_cancel, "was cancelled")


@login_required
@require_POST
def request_release(request: HttpRequest, pk: int) -> HttpResponse:
    """Give an approved or running allocation back."""
    return _act_on_request(request, pk, gpu_request_release, "was released; its quota is free again")


@login_required
@require_POST
def request_reapply(request: HttpRequest, pk: int) -> HttpResponse:
    """Platform approvers: hand a failed or active request back to provisioning (objects applied again)."""
    require_platform_admin(request)
    return _act_on_request(request, pk, gpu_request_reapply, "was handed back to provisioning")


@login_required
@require_POST
def request_resume(request: HttpRequest, pk: int) -> HttpResponse:
    """Bring a request suspended for idling back, if the team's quota allows."""
    return _act_on_request(request, pk, gpu_request_resume, "is resuming: its workload is applied again")


@login_required
@require_POST
def request_keep(request: HttpRequest, pk: int) -> HttpResponse:
    """Keep a running notebook from idle reclaim for one more window."""
    return _act_on_request(request, pk, gpu_request_keep, "is kept running: idle hours count again from now")
