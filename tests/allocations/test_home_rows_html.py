"""The home's quota rows and fleet capacity rows as HTML (allocations.home_pages.quota_rows_html,
fleet_capacity_rows_html) are what templates/home.html printed with its loops, byte for byte."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.utils import translation

from allocations.cluster_pages import node_pool_capacity_rows
from allocations.home_pages import fleet_capacity_rows_html, home_overview, quota_rows_html
from tests.factories import ClusterFactory, NodePoolFactory, QuotaFactory, TeamFactory

pytestmark = pytest.mark.django_db

# The loops as templates/home.html had them before the rows were built in Python.
_QUOTA_ROWS_AS_THE_TEMPLATE_PRINTED_THEM = """{% for q in row.quotas %}
        <tr>
          <td><code>{{ q.quota.resource_name }}</code></td>
          <td>{{ q.quota.scope_label }}</td>
          <td class="num">{{ q.used }} / {{ q.quota.limit }}
            <div class="bar" role="img" aria-label="{{ q.used }} of {{ q.quota.limit }} used"><span style="width: {% widthratio q.used q.quota.limit 100 %}%"></span></div>
          </td>
          <td class="num headroom-free">{{ q.free }}</td>
        </tr>
      {% endfor %}"""  # noqa: E501
_CAPACITY_ROWS_AS_THE_TEMPLATE_PRINTED_THEM = """{% for item in platform.pools %}{% for row in item.rows %}
        <tr>
          <td><a href="{% url 'allocations:cluster-detail' item.pool.cluster.name %}">{{ item.pool.cluster.name }}/{{ item.pool.name }}</a> <span class="muted small">{{ item.pool.gpu_model.name }}</span></td>
          <td><code>{{ row.resource }}</code></td>
          <td class="num">{{ row.allocated }} / {{ row.configured }}
            <div class="bar{% if row.over %} over{% endif %}" role="img" aria-label="{{ row.allocated }} of {{ row.configured }} allocated"><span style="width: {% widthratio row.allocated row.configured 100 %}%"></span></div>
          </td>
        </tr>
      {% endfor %}{% endfor %}"""  # noqa: E501


def _quota_rows() -> list[dict[str, object]]:
    team = TeamFactory()
    pool = NodePoolFactory(cluster=ClusterFactory(name="east"), name="h100-a")
    quotas = [
        QuotaFactory(team=team, resource_name="nvidia.com/gpu", limit=8),
        QuotaFactory(team=team, cluster=pool.cluster, resource_name="nvidia.com/mig-1g.10gb", limit=0),
        QuotaFactory(team=team, node_pool=pool, resource_name="nvidia.com/mig-3g.40gb", limit=2500),
    ]
    # Over the limit, none at all, and enough to group thousands where a language does.
    used = [11, 0, 1234]
    rows = [{"quota": q, "used": u, "free": max(q.limit - u, 0)} for q, u in zip(quotas, used, strict=True)]
    # Text that needs escaping, as a unit the engine escapes (the model's validator would refuse it on a form).
    quotas[0].resource_name = "nvidia.com/<gpu>&\"x'"
    return rows


@pytest.mark.parametrize("language", ["en-us", "de"])
@pytest.mark.parametrize("grouping", [False, True])
def test_quota_rows_are_what_the_template_printed(settings, language, grouping):
    settings.USE_THOUSAND_SEPARATOR = grouping
    rows = _quota_rows()
    with translation.override(language):
        expected = Template(_QUOTA_ROWS_AS_THE_TEMPLATE_PRINTED_THEM).render(Context({"row": {"quotas": rows}}))
        built = quota_rows_html(rows)
    assert built == expected
    assert "<gpu>" not in built and "&lt;gpu&gt;" in built
    thousands = {"en-us": "1,234", "de": "1.234"}[language] if grouping else "1234"
    assert f"{thousands} / " in built  # as the language writes them
    assert quota_rows_html([]) == ""


@pytest.mark.parametrize("grouping", [False, True])
def test_fleet_capacity_rows_are_what_the_template_printed(settings, grouping):
    settings.USE_THOUSAND_SEPARATOR = grouping
    east = ClusterFactory(name="east")
    pools = [
        NodePoolFactory(cluster=east, name="h100-a", node_count=250),  # 2,000 GPUs: thousands to group
        NodePoolFactory(cluster=ClusterFactory(name="west"), name="t4"),
    ]
    capacity = [
        # Over capacity, a resource the pool no longer offers (capacity 0), and an empty pool.
        node_pool_capacity_rows(pool=pools[0], allocated={"nvidia.com/gpu": 2100, "nvidia.com/mig-1g.10gb": 3}),
        node_pool_capacity_rows(pool=pools[1], allocated={}),
    ]
    with translation.override("de"):
        expected = Template(_CAPACITY_ROWS_AS_THE_TEMPLATE_PRINTED_THEM).render(
            Context({"platform": {"pools": capacity}})
        )
        built = fleet_capacity_rows_html(capacity)
    assert built == expected
    assert 'class="bar over"' in built and "/clusters/east/" in built and "/clusters/west/" in built


def test_the_home_carries_the_rows_of_the_users_teams_and_for_an_approver_the_fleet(demo_org):
    from allocations.quota_usage import quota_usage_by_quota

    overview = home_overview(user=demo_org.member)
    [row] = overview["team_rows"]
    assert row["url"] == f"/teams/{demo_org.team.slug}/"
    assert row["quotas_html"] == quota_rows_html(row["quotas"])
    usage = quota_usage_by_quota(quotas=[q["quota"] for q in row["quotas"]])
    assert [q["used"] for q in row["quotas"]] == [usage[q["quota"].pk] for q in row["quotas"]]
    assert overview["platform"] is None

    platform = home_overview(user=demo_org.approver)["platform"]
    assert platform["pools_html"] == fleet_capacity_rows_html(platform["pools"])
    assert f"/clusters/{demo_org.cluster.name}/" in platform["pools_html"]
