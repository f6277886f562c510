"""The request list's status, team and tier filters: every choice offered once, by its label, escaped, and the
chosen ones selected again on the filtered page."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from allocations.models import RequestStatus, SlaTier
from tests.factories import DemoOrg, MembershipFactory, TeamFactory

pytestmark = pytest.mark.django_db


def _options(response, name: str) -> list[tuple[str, str, bool]]:
    html = response.content.decode()
    select = html.partition(f'<select name="{name}" id="id_{name}">')[2].partition("</select>")[0]
    found = re.findall(r'<option value="([^"]*)"\s*(selected)?>([^<]*)</option>', select)
    return [(value, label, bool(chosen)) for value, chosen, label in found]


def test_every_status_and_tier_is_offered_and_the_chosen_ones_stay_selected(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.member)
    url = reverse("allocations:request-list")
    tiers = [(tier.slug, tier.name) for tier in SlaTier.objects.order_by("-priority_value", "slug")]

    opened = client.get(url)
    chosen = client.get(url, {"status": ["active", "pending_approval"], "sla_tier": tiers[-1][0]})

    assert _options(opened, "status") == [("", "Any status", False)] + [
        (value, str(label), False) for value, label in RequestStatus.choices
    ]
    assert _options(opened, "sla_tier") == [("", "Any tier", False)] + [(slug, name, False) for slug, name in tiers]
    assert {value for value, _, selected in _options(chosen, "status") if selected} == {"active", "pending_approval"}
    assert [value for value, _, selected in _options(chosen, "sla_tier") if selected] == [tiers[-1][0]]


def test_a_refused_choice_selects_nothing_and_says_why(client, demo_org: DemoOrg) -> None:
    client.force_login(demo_org.member)

    response = client.get(reverse("allocations:request-list"), {"status": "no-such-status", "team": "nlp"})

    assert not any(selected for _, _, selected in _options(response, "status"))
    assert not any(selected for _, _, selected in _options(response, "team"))
    assert set(response.context["filter_errors"]) == {"status", "team"}


def test_a_team_name_is_escaped_in_its_option(client, demo_org: DemoOrg) -> None:
    MembershipFactory(user=demo_org.member, team=TeamFactory(slug="odd", name='<Vision> & "co"'))
    client.force_login(demo_org.member)

    html = client.get(reverse("allocations:request-list")).content.decode()

    assert '<option value="odd" >&lt;Vision&gt; &amp; &quot;co&quot;</option>' in html
