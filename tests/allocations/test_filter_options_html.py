"""The request list's filter options as HTML (allocations.request_tables.filter_options_html) are what
templates/allocations/request_list.html printed with its loops, byte for byte, whichever options are chosen."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.utils import translation

from allocations.models import RequestStatus
from allocations.request_tables import filter_options_html

# The three loops as the template had them before the options were built in Python.
_STATUS = """{% for value, label in status_options %}
        <option value="{{ value }}" {% if value in chosen.status %}selected{% endif %}>{{ label }}</option>
        {% endfor %}"""
_TEAMS = """{% with chosen_team=chosen.team %}{% for team in team_options %}
        <option value="{{ team.slug }}" {% if chosen_team == team.slug %}selected{% endif %}>{{ team.name }}</option>
        {% endfor %}{% endwith %}"""
_TIERS = """{% with chosen_tier=chosen.sla_tier %}{% for slug, name in tier_options %}
        <option value="{{ slug }}" {% if chosen_tier == slug %}selected{% endif %}>{{ name }}</option>
        {% endfor %}{% endwith %}"""

_TEAM_OPTIONS = [{"slug": "vision", "name": "Computer <Vision> & co"}, {"slug": "nlp", "name": 'NLP "research"'}]
_TIER_OPTIONS = [("tier1_realtime", "Tier 1 \N{EN DASH} real-time"), ("tier3_development", "Tier 3 <dev>")]


@pytest.mark.parametrize(
    "chosen",
    [
        {"status": [], "team": None, "sla_tier": None},  # the page as it opens
        {"status": ["active", "pending_approval"], "team": "nlp", "sla_tier": "tier3_development"},
        {"status": ["no-such-status"], "team": "other", "sla_tier": ""},  # refused choices select nothing
        {"status": None, "team": "vision", "sla_tier": "tier1_realtime"},
    ],
)
@pytest.mark.parametrize("language", ["en-us", "de"])
def test_filter_options_are_what_the_templates_loops_printed(chosen, language):
    context = Context(
        {"chosen": chosen, "status_options": RequestStatus.choices, "team_options": _TEAM_OPTIONS}
        | {"tier_options": _TIER_OPTIONS}
    )
    with translation.override(language):
        assert filter_options_html(
            RequestStatus.choices, selected=lambda value: value in (chosen["status"] or ())
        ) == Template(_STATUS).render(context)
        assert filter_options_html(
            ((team["slug"], team["name"]) for team in _TEAM_OPTIONS), selected=lambda slug: chosen["team"] == slug
        ) == Template(_TEAMS).render(context)
        assert filter_options_html(_TIER_OPTIONS, selected=lambda slug: chosen["sla_tier"] == slug) == Template(
            _TIERS
        ).render(context)


def test_an_option_escapes_its_value_and_label():
    built = filter_options_html([('a"b', "<x> & y")], selected=lambda value: True)
    assert built == '\n        <option value="a&quot;b" selected>&lt;x&gt; &amp; y</option>\n        '
