"""The approval queue page: pending requests and extensions, oldest first, a page at a time, by team if asked.

One query counts what waits per team (the filter's options and each section's count); the first page of each
section is read with SQL compiled once per process, a later page through the queryset; then the quota headroom and
the refusals of that page's rows only. The page costs the same with 8 or 8,000 requests waiting (issue #15; 400
pending requests were one 1 MB page that took 0.6 s to build).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db.models import QuerySet
from django.template.defaultfilters import date as date_filter
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime

from allocations.extension_services import extension_decide_refusal
from allocations.html_text import escaped, float_format, shown, width_ratio
from allocations.models import AllocationExtension, GpuRequest, Team
from allocations.pending_queues import (
    QUEUE_PAGE_SIZE,
    first_pending_extensions,
    first_pending_requests,
    pending_extensions_queue,
    pending_requests_queue,
    pending_work_by_team,
)
from allocations.quotas import quota_fit, quota_headroom_by_request
from allocations.request_tables import id_url_maker, slug_url_maker, time_since
from allocations.selectors import User
from allocations.services import approve_refusal
from gpucore.formatting import format_money_value
from gpucore.vocabulary import LABELS, Strategy


def approval_queue_page(*, user: User, params: Mapping[str, str]) -> dict[str, Any]:
    """What the queue shows for the query ``params``: ``team`` (a slug), ``page`` (requests) and ``ext_page``
    (extensions). An unknown team is ``team_error`` and lists nothing, as the request list's filters do."""
    teams = pending_work_by_team(user=user)
    waiting = {kind: sum(option[kind] for option in teams) for kind in ("requests", "extensions")}
    slug = (params.get("team") or "").strip()
    team, team_error, counts = None, "", waiting
    if slug:
        team = next((option for option in teams if option["slug"] == slug), None)
        if team is None:  # a team with nothing waiting, or none of that name
            team = Team.objects.filter(slug=slug).values("id", "slug", "name").first()
            if team is None:
                team_error = f"There is no team “{slug}”."
        counts = {kind: (team or {}).get(kind, 0) for kind in ("requests", "extensions")}
    team_id = team["id"] if team else None
    requests = _page(
        counts["requests"],
        params.get("page"),
        first=lambda: first_pending_requests(user=user, team_id=team_id),
        rest=lambda: pending_requests_queue(user=user, team_id=team_id),
    )
    extensions = _page(
        counts["extensions"],
        params.get("ext_page"),
        first=lambda: first_pending_extensions(user=user, team_id=team_id),
        rest=lambda: pending_extensions_queue(user=user, team_id=team_id),
    )
    rows = approval_queue_rows(user=user, requests=requests.object_list)
    request_url = id_url_maker("allocations:request-detail")
    team_url = slug_url_maker("allocations:team-detail")
    for row in rows:
        row["html_head"], row["html_tail"] = approval_row_html(
            row, user_id=user.pk, request_url=request_url, team_url=team_url
        )
    return {
        "rows": rows,
        "team_options_html": team_options_html(teams, waiting=waiting, chosen=team),
        "page": requests,
        "extension_rows": pending_extension_rows(user=user, extensions=extensions.object_list),
        "extension_page": extensions,
        # The teams of this page's requests: their month to date is read for all of them at once (budget column).
        "pending_teams": list({row["request"].team_id: row["request"].team for row in rows}.values()),
        "team_options": teams,
        "team": team,
        "team_error": team_error,
        "waiting": waiting,
    }


class _PendingRows:
    """Pending rows by position, as Django's paginator slices them: the first page from its compiled read, a later
    one from the queryset, nothing read for an empty slice."""

    def __init__(self, first: Callable[[], list[Any]], rest: Callable[[], QuerySet]) -> None:
        self.first, self.rest = first, rest

    def __getitem__(self, bounds: slice) -> list[Any]:
        if bounds.stop <= bounds.start:
            return []
        if bounds.start == 0 and bounds.stop <= QUEUE_PAGE_SIZE:
            return self.first()[: bounds.stop]
        return list(self.rest()[bounds])


class _CountedPaginator(Paginator):
    """Django's paginator over rows whose count was read with the team counts: exact, and not read again."""

    count_exact = True

    def __init__(self, rows: _PendingRows, count: int) -> None:
        super().__init__(rows, QUEUE_PAGE_SIZE)
        self.__dict__["count"] = count  # the cached_property's own slot


def _page(count: int, number: str | None, *, first: Callable[[], list[Any]], rest: Callable[[], QuerySet]) -> Page:
    return _CountedPaginator(_PendingRows(first, rest), count).get_page(number)


def approval_queue_rows(*, user: User, requests: Iterable[GpuRequest]) -> list[dict[str, object]]:
    """Pending requests as the queue prints them, each with the quota headroom it would draw on and why this user
    may not review it (their own), if so."""
    requests = list(requests)
    headroom_by_request = quota_headroom_by_request(requests=requests)
    rows = []
    for request in requests:
        # The approval's own quota rule: a tier-3 request over its nominal quota fits by borrowing, others do not.
        fit = quota_fit(request=request, headroom=headroom_by_request[request.pk])
        rows.append(
            {
                "request": request,
                "headroom": fit.headroom,
                "fits": fit.fits,
                "borrows": fit.borrowed,
                "quota_refusal": fit.refusal,
                "quota_refusal_short": fit.short_refusal,
                "review_refusal": approve_refusal(user=user, request=request),
            }
        )
    return rows


def pending_extension_rows(*, user: User, extensions: Iterable[AllocationExtension]) -> list[AllocationExtension]:
    """Pending extensions for the queue, each with ``decide_refusal``: why this user may not decide it."""
    extensions = list(extensions)
    for extension in extensions:
        extension.decide_refusal = extension_decide_refusal(user=user, extension=extension)
    return extensions


# --- A pending request's row of the queue as HTML -------------------------------------------------------------------
# The row as templates/allocations/approval_queue.html printed it with the engine, cell by cell: ~1.2 ms a row there,
# 32 ms for a page of 26 (issue #15). Every value goes through ``shown`` (what ``{{ value }}`` prints). The
# template puts the budget cell's panel (billing's) between the two halves. Change the markup here, not there.
_STRATEGY_LABELS = LABELS[Strategy]  # as templates/allocations/_strategy.html prints them
_NO_VALUE = "\N{EM DASH}"


def team_options_html(
    options: Iterable[Mapping[str, Any]], *, waiting: Mapping[str, int], chosen: Mapping[str, Any] | None
) -> SafeString:
    """The team filter's options with each team's waiting requests and extensions (``pending_work_by_team``), "every
    team" first, the ``chosen`` team selected: what the queue's template printed with a ``{% for %}`` (issue #15)."""
    chosen_slug = chosen.get("slug") if chosen else None
    html = f'<option value="">Every team ({_waiting_text(waiting)})</option>\n        '
    for option in options:
        selected = " selected" if chosen_slug == option["slug"] else ""
        html += (
            f'\n        <option value="{escaped(option["slug"])}"{selected}>{escaped(option["name"])} '
            f"({_waiting_text(option)})</option>\n        "
        )
    return mark_safe(html)  # noqa: S308 - every value is escaped


def _waiting_text(counts: Mapping[str, int]) -> str:
    # "3 requests, 1 extension", the counts grouped by thousands as {{ n|floatformat:"g" }} prints them.
    requests, extensions = counts["requests"], counts["extensions"]
    return (
        f"{float_format(requests, 'g')} request{'' if requests == 1 else 's'}, "
        f"{float_format(extensions, 'g')} extension{'' if extensions == 1 else 's'}"
    )


def review_forms_html(rows: Iterable[Mapping[str, Any]], *, csrf_token: str, next_path: str) -> SafeString:
    """The hidden review form of each row (outside the bulk form, which cannot hold forms: each row's comment and
    buttons name theirs), as the queue's template printed them with a ``{% for %}`` (issue #15)."""
    review_url = id_url_maker("allocations:approval-review")
    csrf = f'<input type="hidden" name="csrfmiddlewaretoken" value="{escaped(csrf_token)}">'
    next_input = f'<input type="hidden" name="next" value="{escaped(next_path)}">'
    return mark_safe(  # noqa: S308 - every value is escaped
        "".join(
            f'\n<form method="post" action="{escaped(review_url(row["request"].pk))}" '
            f'id="review-{shown(row["request"].pk)}" hidden>{csrf}{next_input}</form>\n'
            for row in rows
        )
    )


def _key(mapping: Any, key: str) -> Any:
    # ``{{ mapping.key }}`` of a spec's nested dicts: nothing (falsy) where the template's lookup would find nothing.
    return mapping.get(key) if isinstance(mapping, Mapping) else None


def _cost_cell(spec: Any) -> str:
    cost, monthly = _key(spec, "estimated_cost"), _key(spec, "estimated_monthly_cost")
    cell = ""
    if _key(cost, "amount"):
        hours = float_format(_key(cost, "hours") or "", "-2")
        cell += (
            f"<strong>{shown(format_money_value(cost, settings.PORTAL_CURRENCY))}</strong><br>"
            f'<span class="muted small">for {hours} h</span><br>'
        )
    if _key(monthly, "amount"):
        monthly_text = shown(format_money_value(monthly, settings.PORTAL_CURRENCY))
        return f'{cell}{monthly_text}<span class="muted small">/month</span>'
    return f'{cell}<span class="muted">no price</span>'


def _headroom_item(item: Any, units: int) -> str:
    quota = item.quota
    over = " over" if item.available < units and not item.borrowed else ""
    ratio = width_ratio(item.in_use, quota.limit)
    if item.borrowed:
        note = (
            f'<span class="badge badge-borrowed">Borrows {shown(item.borrowed)}</span> <span class="muted small">'
            f"fits: tier 3 borrows beyond the nominal {shown(quota.limit)} (limit {shown(quota.borrowing_limit)}"
            " more)</span>"
        )
    elif item.available < units:
        note = f'<span class="no">needs {shown(units)}, {shown(item.available)} free</span>'
    else:
        note = f'<span class="muted small">{shown(item.available)} free</span>'
    in_use, limit = shown(item.in_use), shown(quota.limit)
    return (
        f"\n          <div>{shown(quota.scope_label)}: {in_use} / {limit} used"
        f'\n            <div class="bar{over}" role="img" aria-label="{in_use} of {limit} used">'
        f'<span style="width: {ratio}%"></span></div>'
        f"\n            {note}\n          </div>\n          "
    )


def approval_row_html(
    row: Mapping[str, Any], *, user_id: int, request_url: Callable[[int], str], team_url: Callable[[str], str]
) -> tuple[SafeString, SafeString]:
    """A row of ``approval_queue_rows`` as the queue's table prints it: the HTML before the budget cell's panel and
    the HTML after it (``request_url`` and ``team_url`` from ``id_url_maker`` and ``slug_url_maker``)."""
    r = row["request"]
    pk, name, units, resource = shown(r.pk), shown(r.name), shown(r.resource_units), shown(r.resource_name)
    fits, borrows = row["fits"], row["borrows"]
    css = "" if fits and not borrows else ("no-fit" if not fits else "fits-borrowed")
    fit = ("borrowed" if borrows else "yes") if fits else "no"
    you = " (you)" if r.requester_id == user_id else ""
    strategy = _STRATEGY_LABELS.get(r.strategy) or shown(r.strategy or _NO_VALUE)
    pool = f'<br><span class="muted small">{shown(r.node_pool)}</span>' if r.node_pool else ""
    tier = shown(r.sla_tier.name if r.sla_tier and r.sla_tier.name else _NO_VALUE)
    head = (
        f'\n      <tr id="pending-{pk}" class="{css}" data-fits="{fit}">'
        f'\n        <td><input type="checkbox" name="ids" value="{pk}" aria-label="Tick #{pk} {name}" '
        f'data-label="#{pk} {name} ({shown(r.team.name)}, {units} \N{MULTIPLICATION SIGN} {resource})"></td>'
        f'\n        <td data-label="Request"><a href="{shown(request_url(r.pk))}">#{pk} {name}</a><br>'
        f'<span class="muted small">by {shown(r.requester.get_username())}{you}</span></td>'
        f'\n        <td data-label="Team"><a href="{shown(team_url(r.team.slug))}">{shown(r.team.name)}</a></td>'
        f'\n        <td data-label="Tier">{tier}</td>'
        f'\n        <td data-label="Allocation">{strategy}\n<br><code>{resource}</code> \N{MULTIPLICATION SIGN} {units}'
        f"{pool}</td>"
        f'\n        <td class="num" data-label="Cost">{_cost_cell(r.spec)}</td>'
        f'\n        <td class="budget-cell" data-label="This month\'s budget">'
    )
    headroom = "".join(_headroom_item(item, r.resource_units) for item in row["headroom"]) or (
        f'\n          <span class="no">No quota for <code>{resource}</code></span>\n          '
    )
    refusal = ""
    if row["headroom"] and not fits and row["quota_refusal_short"]:
        refusal = (
            f'<p class="muted small quota-refusal" title="{shown(row["quota_refusal"])}">'
            f"{shown(row['quota_refusal_short'])}</p>"
        )
    if row["review_refusal"]:
        review = (
            f'\n          <span class="muted small" title="{shown(row["review_refusal"])}">Your own request: '
            "another approver reviews it.</span>\n          "
        )
    else:
        review = (
            f'\n          <input type="text" name="comment" form="review-{pk}" placeholder="Comment" '
            f'aria-label="Comment on #{pk}">'
            f'\n          <button type="submit" form="review-{pk}" name="decision" value="approve" '
            'class="button primary small">Approve</button>'
            f'\n          <button type="submit" form="review-{pk}" name="decision" value="reject" '
            'class="button danger small">Reject</button>\n          '
        )
    waited = r.submitted_at or r.created_at
    submitted = shown(date_filter(template_localtime(r.submitted_at), "c"))
    tail = (
        '</td>\n        <td class="headroom" data-label="Quota headroom">'
        f"\n          {headroom}\n          {refusal}\n        </td>"
        f'\n        <td data-label="Waiting" title="submitted {submitted}">'
        f"{shown(time_since(waited))}</td>"
        f'\n        <td class="review" data-label="Review">\n          {review}\n        </td>\n      </tr>\n    '
    )
    return mark_safe(head), mark_safe(tail)  # noqa: S308 - every value above is escaped
