"""The page shell's header built in Python (``{% portal_header %}``, portal/templatetags/portal_shell.py) is what
base.html printed, byte for byte: for every section's page, each role, and text that needs escaping."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest
from django.contrib.auth.context_processors import PermWrapper
from django.contrib.auth.models import AnonymousUser, Permission
from django.template import Context, Template
from django.test import RequestFactory

from portal.context_processors import nav_urls
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

# base.html's header as it was before {% portal_header %}.
_HEADER_AS_THE_TEMPLATE_PRINTED_IT = """
  <header class="topbar">
    <a class="brand" href="{{ nav.home }}" title="Overview"><span class="brand-mark">▣</span> GPU Portal</a>
    {% if user.is_authenticated %}
    <button type="button" class="menu-toggle" aria-controls="topnav" aria-expanded="false">Menu</button>
    <div class="topnav" id="topnav">
    <nav class="mainnav" aria-label="Main">
      {% with url_name=request.resolver_match.url_name %}
      <a href="{{ nav.request_new }}" {% if url_name == 'request-new' %}aria-current="page"{% endif %}>New request</a>
      <a href="{{ nav.request_list }}" {% if url_name == 'request-list' or url_name == 'request-detail' %}aria-current="page"{% endif %}>{% if user_is_approver %}Requests{% else %}My requests{% endif %}</a>
      {% if user_is_approver %}<a href="{{ nav.approvals }}" {% if url_name == 'approvals' %}aria-current="page"{% endif %}>Approvals</a>{% endif %}
      {% if user_is_approver %}<a href="{{ nav.cluster_list }}" {% if url_name == 'cluster-list' or url_name == 'cluster-detail' %}aria-current="page"{% endif %}>Clusters</a>{% endif %}
      {% if user_is_approver %}<a href="{{ nav.utilization }}" {% if url_name == 'utilization' %}aria-current="page"{% endif %}>Utilization</a>{% endif %}
      <a href="{{ nav.team_list }}" {% if url_name == 'team-list' or url_name == 'team-detail' %}aria-current="page"{% endif %}>Teams</a>
      <a href="{{ nav.dashboard }}" {% if url_name == 'dashboard' %}aria-current="page"{% endif %}>Dashboards</a>
      <a href="{{ nav.report_list }}" {% if url_name == 'report-list' or url_name == 'report-detail' %}aria-current="page"{% endif %}>Reports</a>
      {% endwith %}
      {% block nav_extra %}{% endblock %}
    </nav>
    <form class="globalsearch" role="search" method="get" action="{{ nav.search }}">
      <label class="sr-only" for="global-search">Search requests, teams and clusters</label>
      <input id="global-search" type="search" name="q" placeholder="Search…" value="{% if request.resolver_match.url_name == 'search' %}{{ request.GET.q }}{% endif %}" maxlength="100">
    </form>
    <div class="usermenu">
      <nav class="accountnav" aria-label="Account">
        <a href="{{ nav.api_docs }}">API</a>
        <a href="{{ nav.tokens }}" {% if request.resolver_match.app_name == 'tokens' %}aria-current="page"{% endif %}>Tokens</a>
        {% if user.is_staff and perms.audit.view_auditevent %}<a href="{{ nav.audit }}" {% if request.resolver_match.app_name == 'audit' %}aria-current="page"{% endif %}>Audit</a>{% endif %}
        {% if user.is_staff %}<a href="{{ nav.admin }}">Admin</a>{% endif %}
      </nav>
      <span class="username">{{ user.get_username }}{% if user_is_approver %} <span class="badge">approver</span>{% endif %}</span>
      <form method="post" action="{{ nav.logout }}">{% csrf_token %}<button type="submit" class="linkbutton">Sign out</button></form>
    </div>
    </div>
    {% endif %}
  </header>"""  # noqa: E501

URL_NAMES = [
    ("allocations", "request-new"),
    ("allocations", "request-list"),
    ("allocations", "request-detail"),
    ("allocations", "approvals"),
    ("allocations", "cluster-list"),
    ("allocations", "cluster-detail"),
    ("billing", "utilization"),
    ("allocations", "team-list"),
    ("allocations", "team-detail"),
    ("billing", "dashboard"),
    ("billing", "report-list"),
    ("billing", "report-detail"),
    ("allocations", "search"),
    ("tokens", "list"),
    ("audit", "event-list"),
    ("", "home"),
    (None, None),  # no URL matched (an error page)
]


def _users():
    member = UserFactory(username="<b>o'neil&co</b>")
    staff = UserFactory(username="ops", is_staff=True)
    auditor = UserFactory(username="auditor", is_staff=True)
    auditor.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    not_staff_with_audit = UserFactory(username="reader")
    not_staff_with_audit.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    return [AnonymousUser(), member, staff, auditor, not_staff_with_audit]


# The old template's {% csrf_token %} with "NOTPROVIDED" calls format_html() with no arguments (deprecated in Django).
@pytest.mark.filterwarnings("ignore:Calling format_html")
def test_the_header_is_what_the_template_printed() -> None:
    old = Template(_HEADER_AS_THE_TEMPLATE_PRINTED_IT)
    new = Template("{% load portal_shell %}{% portal_header %}")
    factory = RequestFactory()
    compared = 0
    for user, (app_name, url_name), approver, query, token in itertools.product(
        _users(), URL_NAMES, [False, True], ["", "?q=a%22b%3C%2Fx%3E%26", "?other=1"], ["tok<en>", "NOTPROVIDED", ""]
    ):
        request = factory.get("/somewhere/" + query)
        request.user = user
        request.resolver_match = None if url_name is None else SimpleNamespace(url_name=url_name, app_name=app_name)
        values = {
            "request": request,
            "user": user,
            "nav": nav_urls(),
            "user_is_approver": approver,
            "csrf_token": token,
        }
        values["perms"] = PermWrapper(user)
        assert new.render(Context(values)) == old.render(Context(values)), (user, url_name, approver, query, token)
        compared += 1
    assert compared == 5 * len(URL_NAMES) * 2 * 3 * 3
