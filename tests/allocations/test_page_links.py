"""The list pages' links built from one reverse (allocations.request_tables.id_url_maker, slug_url_maker) are
reverse()'s."""

import pytest
from django.urls import reverse, set_script_prefix

from allocations.request_tables import id_url_maker, slug_url_maker


def test_links_equal_reverse_under_each_script_prefix():
    # The makers keep what they reversed per process: a prefix met again, or another one, is still reverse()'s.
    try:
        for prefix in ["/", "/portal/", "/", "/other/"]:
            set_script_prefix(prefix)
            request_url = id_url_maker("allocations:request-detail")
            team_url = slug_url_maker("allocations:team-detail")
            for pk in (1, 42, 987654321987, 10**15):
                assert request_url(pk) == reverse("allocations:request-detail", args=[pk])
            for slug in ("vision", "nlp-research", "a_b-9", "url-stand-in-slug"):
                assert team_url(slug) == reverse("allocations:team-detail", args=[slug])
            assert request_url(7).startswith(prefix)
    finally:
        set_script_prefix("/")


@pytest.mark.django_db
def test_labelled_rows_read_as_the_models_display_and_links(demo_org):
    from allocations.models import GpuRequest
    from allocations.request_tables import label_request_rows
    from tests.factories import GpuRequestFactory

    GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    for request in GpuRequest.objects.all():
        (row,) = label_request_rows(
            list(GpuRequest.objects.filter(pk=request.pk).values("id", "team__slug", "workload_type", "status"))
        )
        assert row["url"] == reverse("allocations:request-detail", args=[request.pk])
        assert row["team_url"] == reverse("allocations:team-detail", args=[request.team.slug])
        assert row["workload_label"] == request.get_workload_type_display()
        assert row["status_label"] == request.get_status_display()


@pytest.mark.django_db
@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris"])
def test_labelled_rows_carry_the_created_texts_the_filters_gave(demo_org, settings, zone):
    from datetime import timedelta

    from django.template import Context, Template
    from django.utils import timezone

    from allocations.models import GpuRequest
    from allocations.request_tables import label_request_rows
    from tests.factories import GpuRequestFactory

    settings.TIME_ZONE = zone
    created = GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    GpuRequest.objects.filter(pk=created.pk).update(created_at=timezone.now() - timedelta(days=3, hours=5))
    template = Template("{{ r.created_at|date:'c' }}|{{ r.created_at|timesince }}")
    for row in GpuRequest.objects.values("id", "workload_type", "status", "created_at"):
        expected = template.render(Context({"r": row}))
        (labelled,) = label_request_rows([dict(row)])
        assert f"{labelled['created_iso']}|{labelled['created_ago']}" == expected
    assert "+01:00" in expected or zone == "UTC"


# The my-requests table's rows as the template printed them before allocations.request_tables.request_list_rows_html.
_ROWS_AS_THE_TEMPLATE_PRINTED_THEM = """{% for r in rows %}
      <tr>
        <td>{{ r.id }}</td>
        <td><a href="{{ r.url }}">{{ r.name }}</a></td>
        <td><a href="{{ r.team_url }}">{{ r.team__name }}</a></td>
        <td>{{ r.requester__username }}</td>
        <td>{{ r.workload_label }}</td>
        <td>{% if r.resource_name %}<code>{{ r.resource_name }}</code> × {{ r.resource_units }}{% else %}<span class="muted">—</span>{% endif %}</td>
        <td>{{ r.sla_tier__name|default:"—" }}</td>
        <td><span class="status status-{{ r.status }}">{{ r.status_label }}</span></td>
        <td title="{{ r.created_at|date:'c' }}">{{ r.created_at|timesince }} ago</td>
      </tr>
    {% endfor %}"""  # noqa: E501, RUF001


@pytest.mark.django_db
def test_request_list_rows_html_is_what_the_template_printed(demo_org):
    from django.template import Context, Template

    from allocations.models import GpuRequest, SlaTier
    from allocations.request_list_rows import REQUEST_TABLE_COLUMNS
    from allocations.request_tables import label_request_rows, request_list_rows_html
    from tests.factories import GpuRequestFactory

    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, name='<b>"odd" & name</b>')
    GpuRequestFactory(team=demo_org.team, requester=demo_org.member, sla_tier=SlaTier.objects.first())
    unallocated = GpuRequestFactory(team=demo_org.team, requester=demo_org.member)
    GpuRequest.objects.filter(pk=unallocated.pk).update(resource_name="", resource_units=0, sla_tier=None)
    rows = label_request_rows(list(GpuRequest.objects.values(*REQUEST_TABLE_COLUMNS)))
    assert {bool(row["sla_tier__name"]) for row in rows} == {True, False}
    assert {bool(row["resource_name"]) for row in rows} == {True, False}
    expected = Template(_ROWS_AS_THE_TEMPLATE_PRINTED_THEM).render(Context({"rows": rows}))
    assert request_list_rows_html(rows) == expected
    assert "&lt;b&gt;&quot;odd&quot; &amp; name&lt;/b&gt;" in expected
