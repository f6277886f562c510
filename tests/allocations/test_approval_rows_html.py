"""What the approval queue's rows show: whether each request fits its quota (or borrows), the headroom, the cost,
who may review it, escaped names; each row's review form; the team filter's options with their counts."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from allocations.models import GpuRequest, Quota
from allocations.requests.services import gpu_request_approve, gpu_request_submit
from tests.factories import GpuRequestFactory, QuotaFactory

pytestmark = pytest.mark.django_db

TIER3 = {"workload_type": "development", "gpu_memory_gb": 40, "sla_tier": "tier3_development", "gpu_count": 2}
TIER2 = {"workload_type": "training", "gpu_memory_gb": 40, "sla_tier": "tier2_batch", "gpu_count": 1}


def test_each_row_shows_the_fit_headroom_cost_and_review(demo_org, client) -> None:
    org = demo_org
    # A cohort on the demo cluster: vision may borrow 3 beyond its nominal 2, nlp lends 3 of its 4.
    Quota.objects.all().delete()
    QuotaFactory(team=org.team, cluster=org.cluster, limit=2, borrowing_limit=3)
    QuotaFactory(team=org.other_team, cluster=org.cluster, limit=4, lending_limit=3)
    QuotaFactory(team=org.team, resource_name="nvidia.com/mig-1g.10gb", limit=3)

    def submit(profile, name):
        return gpu_request_submit(
            command=["python", "main.py"], acting_user=org.member, team=org.team, name=name, profile_data=profile
        )

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
    response = client.get(reverse("allocations:approvals"))
    html = response.content.decode()
    rows = {row["request"].name: row["request"] for row in response.context["rows"]}
    assert GpuRequest.objects.count() == 6 and len(rows) == 5

    def row_html(name: str) -> str:
        return html.partition(f'<tr id="pending-{rows[name].pk}"')[2].partition("</tr>")[0]

    borrows = row_html("dev-borrows")
    assert borrows.startswith(' class="fits-borrowed" data-fits="borrowed">') and "Borrows 2" in borrows
    over = row_html("train-over")
    assert over.startswith(' class="no-fit" data-fits="no">') and 'class="bar over"' in over
    assert 'class="muted small quota-refusal"' in over and "Only tier 3 may borrow" in over
    no_quota = row_html("no-quota")
    assert '<span class="no">No quota for <code>nvidia.com/mig-7g.80gb</code></span>' in no_quota
    assert "no price" in no_quota and "waiting" not in no_quota
    own = row_html('<b>"odd" & name</b>')
    assert "&lt;b&gt;&quot;odd&quot; &amp; name&lt;/b&gt;" in own and "(you)" in own
    assert "Your own request: another approver reviews it." in own and 'name="decision"' not in own
    assert f'<br><span class="muted small">{org.pool}</span>' in own
    mig = row_html("mig")
    assert '<td data-label="Tier">\N{EM DASH}</td>' in mig and "MIG slice" not in mig  # on a dedicated pool
    assert f'href="/teams/{org.team.slug}/">{org.team.name}</a>' in mig and "free</span>" in mig
    assert '<span class="muted small">/month</span>' in html  # a priced request's monthly cost
    # A review form for each row, outside the bulk form, coming back to this page.
    forms = re.findall(r'<form method="post" action="/approvals/(\d+)/" id="review-(\d+)" hidden>', html)
    assert sorted(int(pk) for pk, _ in forms) == sorted(r.pk for r in rows.values())
    assert all(pk == form_id for pk, form_id in forms)
    assert html.count('<input type="hidden" name="next" value="/approvals/">') == len(rows) + 1


def test_the_team_filter_shows_each_team_with_its_counts_and_the_chosen_one(demo_org, client) -> None:
    demo_org.other_team.name = 'N<L>P & "co"'
    demo_org.other_team.save()
    GpuRequestFactory(team=demo_org.team)
    for _ in range(2):
        GpuRequestFactory(team=demo_org.other_team)
    client.force_login(demo_org.approver)

    html = client.get(reverse("allocations:approvals"), {"team": demo_org.other_team.slug}).content.decode()
    select = html.partition('<select name="team"')[2].partition("</select>")[0]

    assert '<option value="">Every team (3 requests, 0 extensions)</option>' in select
    assert f'<option value="{demo_org.team.slug}">{demo_org.team.name} (1 request, 0 extensions)</option>' in select
    chosen = f'<option value="{demo_org.other_team.slug}" selected>N&lt;L&gt;P &amp; &quot;co&quot; (2 requests,'
    assert chosen in select


def test_each_row_shows_the_image_command_and_purpose_to_catch_a_bad_one(demo_org, client) -> None:
    chosen = gpu_request_submit(
        acting_user=demo_org.member,
        team=demo_org.team,
        name="serve",
        purpose="Fine-tune <ResNet> on the new labels",
        profile_data=TIER2,
        image="registry.example.com/ml/train:2.4",
        command=["python", "train.py", "--epochs", "3"],
    )
    # Development is the one workload whose default image runs a default command (JupyterLab).
    notebook = {"workload_type": "development", "gpu_memory_gb": 3, "sla_tier": "tier3_development"}
    default = gpu_request_submit(acting_user=demo_org.member, team=demo_org.team, name="bare", profile_data=notebook)
    own = gpu_request_submit(
        acting_user=demo_org.member,
        team=demo_org.team,
        name="own",
        purpose="x",
        profile_data=TIER2,
        image="registry.example.com/ml/train:2.5",
    )

    client.force_login(demo_org.approver)
    html = client.get(reverse("allocations:approvals")).content.decode()

    mine = html.partition(f'id="workload-{chosen.pk}"')[2].partition("</div>")[0]
    assert "Fine-tune &lt;ResNet&gt; on the new labels" in mine
    assert "<code>registry.example.com/ml/train:2.4</code>" in mine
    assert "<code>python train.py --epochs 3</code>" in mine
    bare = html.partition(f'id="workload-{default.pk}"')[2].partition("</div>")[0]
    assert "No purpose given" in bare and "the development default" in bare and "the workload's default" in bare
    assert "No command: the image's own" in html.partition(f'id="workload-{own.pk}"')[2].partition("</div>")[0]
