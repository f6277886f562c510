"""The approval queue's rows as HTML (allocations.approval_queue.approval_row_html) are what the template printed."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.urls import reverse

from allocations.models import GpuRequest, Quota
from allocations.services import gpu_request_approve, gpu_request_submit
from tests.factories import GpuRequestFactory, QuotaFactory

pytestmark = pytest.mark.django_db

# The queue's rows as templates/allocations/approval_queue.html printed them before approval_row_html (the budget
# cell's panel, billing's, stays in the template: here a marker).
_ROWS_AS_THE_TEMPLATE_PRINTED_THEM = """{% for row in rows %}{% with r=row.request %}
      <tr id="pending-{{ r.pk }}" class="{% if not row.fits %}no-fit{% elif row.borrows %}fits-borrowed{% endif %}" data-fits="{% if row.fits %}{% if row.borrows %}borrowed{% else %}yes{% endif %}{% else %}no{% endif %}">
        <td><input type="checkbox" name="ids" value="{{ r.pk }}" aria-label="Tick #{{ r.pk }} {{ r.name }}" data-label="#{{ r.pk }} {{ r.name }} ({{ r.team.name }}, {{ r.resource_units }} × {{ r.resource_name }})"></td>
        <td data-label="Request"><a href="{% url 'allocations:request-detail' r.pk %}">#{{ r.pk }} {{ r.name }}</a><br><span class="muted small">by {{ r.requester.get_username }}{% if r.requester_id == user.pk %} (you){% endif %}</span></td>
        <td data-label="Team"><a href="{% url 'allocations:team-detail' r.team.slug %}">{{ r.team.name }}</a></td>
        <td data-label="Tier">{{ r.sla_tier.name|default:"—" }}</td>
        <td data-label="Allocation">{% include "allocations/_strategy.html" with strategy=r.strategy %}<br><code>{{ r.resource_name }}</code> × {{ r.resource_units }}{% if r.node_pool %}<br><span class="muted small">{{ r.node_pool }}</span>{% endif %}</td>
        <td class="num" data-label="Cost">{% if r.spec.estimated_cost.amount %}<strong>{{ r.spec.estimated_cost|money }}</strong><br><span class="muted small">for {{ r.spec.estimated_cost.hours|floatformat:"-2" }} h</span><br>{% endif %}{% if r.spec.estimated_monthly_cost.amount %}{{ r.spec.estimated_monthly_cost|money }}<span class="muted small">/month</span>{% else %}<span class="muted">no price</span>{% endif %}</td>
        <td class="budget-cell" data-label="This month's budget">|budget|</td>
        <td class="headroom" data-label="Quota headroom">
          {% for h in row.headroom %}
          <div>{{ h.quota.scope_label }}: {{ h.in_use }} / {{ h.quota.limit }} used
            <div class="bar{% if h.available < r.resource_units and not h.borrowed %} over{% endif %}" role="img" aria-label="{{ h.in_use }} of {{ h.quota.limit }} used"><span style="width: {% widthratio h.in_use h.quota.limit 100 %}%"></span></div>
            {% if h.borrowed %}<span class="badge badge-borrowed">Borrows {{ h.borrowed }}</span> <span class="muted small">fits: tier 3 borrows beyond the nominal {{ h.quota.limit }} (limit {{ h.quota.borrowing_limit }} more)</span>{% elif h.available < r.resource_units %}<span class="no">needs {{ r.resource_units }}, {{ h.available }} free</span>{% else %}<span class="muted small">{{ h.available }} free</span>{% endif %}
          </div>
          {% empty %}
          <span class="no">No quota for <code>{{ r.resource_name }}</code></span>
          {% endfor %}
          {% if row.headroom and not row.fits and row.quota_refusal_short %}<p class="muted small quota-refusal" title="{{ row.quota_refusal }}">{{ row.quota_refusal_short }}</p>{% endif %}
        </td>
        <td data-label="Waiting" title="submitted {{ r.submitted_at|date:'c' }}">{{ r.submitted_at|default:r.created_at|timesince }}</td>
        <td class="review" data-label="Review">
          {% if row.review_refusal %}
          <span class="muted small" title="{{ row.review_refusal }}">Your own request: another approver reviews it.</span>
          {% else %}
          <input type="text" name="comment" form="review-{{ r.pk }}" placeholder="Comment" aria-label="Comment on #{{ r.pk }}">
          <button type="submit" form="review-{{ r.pk }}" name="decision" value="approve" class="button primary small">Approve</button>
          <button type="submit" form="review-{{ r.pk }}" name="decision" value="reject" class="button danger small">Reject</button>
          {% endif %}
        </td>
      </tr>
    {% endwith %}{% endfor %}"""  # noqa: E501, RUF001

TIER3 = {"workload_type": "development", "gpu_memory_gb": 40, "sla_tier": "tier3_development", "gpu_count": 2}
TIER2 = {"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch", "gpu_count": 1}


def test_the_rows_html_is_what_the_template_printed(demo_org, client) -> None:
    org = demo_org
    # A cohort on the demo cluster: vision may borrow 3 beyond its nominal 2, nlp lends 3 of its 4.
    Quota.objects.all().delete()
    QuotaFactory(team=org.team, cluster=org.cluster, limit=2, borrowing_limit=3)
    QuotaFactory(team=org.other_team, cluster=org.cluster, limit=4, lending_limit=3)
    QuotaFactory(team=org.team, resource_name="nvidia.com/mig-1g.10gb", limit=3)

    def submit(profile, name):
        return gpu_request_submit(acting_user=org.member, team=org.team, name=name, profile_data=profile)

    # All pass submission (the quota is free), then approving the first uses the nominal 2 up.
    first = submit({**TIER2, "gpu_count": 2}, "first")
    submit(TIER3, "dev-borrows")  # fits by borrowing
    submit(TIER2, "train-over")  # over the nominal quota: refused, with the short reason
    # The approver's own: another approver reviews it.
    GpuRequestFactory(team=org.other_team, requester=org.approver, name='<b>"odd" & name</b>', node_pool=org.pool)
    gpu_request_approve(request=first, acting_user=org.approver)
    GpuRequestFactory(team=org.other_team, name="no-quota", resource_name="nvidia.com/mig-7g.80gb", submitted_at=None)
    GpuRequestFactory(
        team=org.team, name="mig", resource_name="nvidia.com/mig-1g.10gb", node_pool=org.pool, sla_tier=None
    )

    client.force_login(org.approver)
    rows = client.get(reverse("allocations:approvals")).context["rows"]

    kinds = {(row["fits"], bool(row["borrows"]), bool(row["headroom"]), bool(row["review_refusal"])) for row in rows}
    assert {(True, True, True, False), (False, False, True, False), (False, False, False, False)} <= kinds
    assert any(row["review_refusal"] for row in rows) and any(row["request"].node_pool for row in rows)
    assert any(row["request"].submitted_at is None for row in rows)
    assert any(not row["request"].spec.get("estimated_monthly_cost") for row in rows)
    assert any(row["request"].spec.get("estimated_monthly_cost") for row in rows)
    expected = Template(_ROWS_AS_THE_TEMPLATE_PRINTED_THEM).render(Context({"rows": rows, "user": org.approver}))
    assert "".join(f"{row['html_head']}|budget|{row['html_tail']}" for row in rows) == expected
    assert "&lt;b&gt;&quot;odd&quot; &amp; name&lt;/b&gt;" in expected and "Borrows 2" in expected
    assert GpuRequest.objects.count() == 6


# The rows' hidden review forms as the queue's template printed them before review_forms_html.
_REVIEW_FORMS_AS_THE_TEMPLATE_PRINTED_THEM = """{% for row in rows %}
<form method="post" action="{% url 'allocations:approval-review' row.request.pk %}" id="review-{{ row.request.pk }}" hidden>{% csrf_token %}<input type="hidden" name="next" value="{{ request.get_full_path }}"></form>
{% endfor %}"""  # noqa: E501


def test_the_review_forms_are_what_the_template_printed(demo_org, rf) -> None:
    from allocations.approval_queue import review_forms_html

    rows = [{"request": GpuRequestFactory(team=demo_org.team)} for _ in range(3)]
    request = rf.get("/approvals/", {"team": 'vi"sion&<x>', "page": "2"})
    token = "abc<&>123"
    expected = Template(_REVIEW_FORMS_AS_THE_TEMPLATE_PRINTED_THEM).render(
        Context({"rows": rows, "request": request, "csrf_token": token})
    )
    built = review_forms_html(rows, csrf_token=token, next_path=request.get_full_path())
    assert built == expected and built.count("<form") == 3 and "abc&lt;&amp;&gt;123" in built
    assert review_forms_html([], csrf_token=token, next_path="/approvals/") == ""


# The team filter's options as the queue's template printed them before team_options_html.
_TEAM_OPTIONS_AS_THE_TEMPLATE_PRINTED_THEM = """<option value="">Every team ({{ waiting.requests|floatformat:"g" }} request{{ waiting.requests|pluralize }}, {{ waiting.extensions|floatformat:"g" }} extension{{ waiting.extensions|pluralize }})</option>
        {% for option in team_options %}
        <option value="{{ option.slug }}"{% if team.slug == option.slug %} selected{% endif %}>{{ option.name }} ({{ option.requests|floatformat:"g" }} request{{ option.requests|pluralize }}, {{ option.extensions|floatformat:"g" }} extension{{ option.extensions|pluralize }})</option>
        {% endfor %}"""  # noqa: E501


def test_the_team_options_are_what_the_template_printed() -> None:
    from allocations.approval_queue import team_options_html

    options = [
        {"id": 1, "slug": "vision", "name": "Vision", "requests": 1, "extensions": 0},
        {"id": 2, "slug": "nlp", "name": 'N<L>P & "co"', "requests": 1234, "extensions": 1},
        {"id": 3, "slug": "a-b_c", "name": "ABC", "requests": 0, "extensions": 2},
    ]
    template = Template(_TEAM_OPTIONS_AS_THE_TEMPLATE_PRINTED_THEM)
    for waiting in ({"requests": 1235, "extensions": 3}, {"requests": 1, "extensions": 1}):
        for chosen in (None, options[1], {"id": 9, "slug": "gone", "name": "Gone"}):
            for shown in (options, []):
                context = {"team_options": shown, "waiting": waiting, "team": chosen}
                expected = template.render(Context(context))
                assert team_options_html(shown, waiting=waiting, chosen=chosen) == expected
    built = team_options_html(options, waiting={"requests": 1235, "extensions": 3}, chosen=options[1])
    assert "(1,234 requests, 1 extension)" in built and '<option value="nlp" selected>N&lt;L&gt;P' in built
