"""The page shell's header (base.html): the links each role sees, the current section marked, the account links,
the search box and the sign-out form, with every value escaped."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from django.contrib.auth.context_processors import PermWrapper
from django.contrib.auth.models import AnonymousUser, Permission
from django.template.loader import get_template
from django.test import RequestFactory
from django.urls import reverse

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

MEMBER_LINKS = ["New request", "My requests", "Teams", "Reservations", "Dashboards", "Reports"]
APPROVER_LINKS = ["New request", "Requests", "Approvals", "Clusters", "Utilization", "Teams", "Dashboards", "Reports"]


def header(
    user,
    *,
    url_name: str | None = None,
    app_name: str = "",
    approver: bool = False,
    query: str = "",
    token: str = "tok<en>",  # noqa: S107 - a CSRF token to escape, not a secret
) -> str:
    request = RequestFactory().get("/somewhere/" + query)
    request.user = user
    request.resolver_match = None if url_name is None else SimpleNamespace(url_name=url_name, app_name=app_name)
    context = {
        "request": request,
        "user": user,
        "perms": PermWrapper(user),
        "user_is_approver": approver,
        "csrf_token": token,
    }
    html = get_template("base.html").render(context, request)  # with the context processors, as a view renders it
    return html.partition("<header")[2].partition("</header>")[0]


def links(html: str, nav: str) -> list[tuple[str, str, bool]]:
    """(label, href, current) of each link in the named <nav>."""
    block = html.partition(f'aria-label="{nav}"')[2].partition("</nav>")[0]
    return [
        (label, href, "aria-current" in rest)
        for href, rest, label in re.findall(r'<a href="([^"]*)"([^>]*)>([^<]*)</a>', block)
    ]


def current(html: str) -> list[str]:
    return [label for nav in ("Main", "Account") for label, _, is_current in links(html, nav) if is_current]


def test_a_visitor_sees_the_brand_only() -> None:
    html = header(AnonymousUser())
    assert f'<a class="brand" href="{reverse("home")}" title="Overview">' in html
    assert "mainnav" not in html and "Sign out" not in html and "global-search" not in html


def test_a_member_sees_their_sections_and_the_current_one_marked() -> None:
    member = UserFactory(username="<b>o'neil&co</b>")
    html = header(member, url_name="request-detail", app_name="allocations")
    main = links(html, "Main")
    assert [label for label, _, _ in main] == MEMBER_LINKS
    assert ("My requests", reverse("allocations:request-list"), True) in main
    assert current(html) == ["My requests"]
    assert [label for label, _, _ in links(html, "Account")] == ["API", "Tokens"]
    assert '<span class="username">&lt;b&gt;o&#x27;neil&amp;co&lt;/b&gt;</span>' in html
    assert "badge" not in html
    assert f'<form method="post" action="{reverse("logout")}">' in html


@pytest.mark.parametrize(
    ("url_name", "app_name", "marked"),
    [
        ("request-new", "allocations", "New request"),
        ("request-list", "allocations", "Requests"),
        ("approvals", "allocations", "Approvals"),
        ("cluster-list", "allocations", "Clusters"),
        ("cluster-detail", "allocations", "Clusters"),
        ("utilization", "billing", "Utilization"),
        ("team-detail", "allocations", "Teams"),
        ("dashboard", "billing", "Dashboards"),
        ("report-detail", "billing", "Reports"),
        ("list", "tokens", "Tokens"),
    ],
)
def test_an_approver_sees_every_section_with_the_current_one_marked(url_name: str, app_name: str, marked: str) -> None:
    html = header(UserFactory(), url_name=url_name, app_name=app_name, approver=True)
    assert [label for label, _, _ in links(html, "Main")] == APPROVER_LINKS
    assert current(html) == [marked]
    assert ' <span class="badge">approver</span>' in html


def test_no_section_is_marked_on_a_page_outside_them() -> None:
    for url_name, app_name in [("home", ""), ("search", "allocations"), (None, "")]:
        assert current(header(UserFactory(), url_name=url_name, app_name=app_name, approver=True)) == []


def test_staff_see_admin_and_only_auditors_see_the_audit_log() -> None:
    staff = UserFactory(is_staff=True)
    auditor = UserFactory(is_staff=True)
    auditor.user_permissions.add(Permission.objects.get(codename="view_auditevent"))
    reader = UserFactory()  # the permission without staff
    reader.user_permissions.add(Permission.objects.get(codename="view_auditevent"))

    assert [label for label, _, _ in links(header(staff), "Account")] == ["API", "Tokens", "Admin"]
    html = header(auditor, url_name="event-list", app_name="audit")
    assert links(html, "Account") == [
        ("API", reverse("api-docs"), False),
        ("Tokens", reverse("tokens:list"), False),
        ("Audit", reverse("audit:event-list"), True),
        ("Admin", reverse("admin:index"), False),
    ]
    assert [label for label, _, _ in links(header(reader), "Account")] == ["API", "Tokens"]


def test_the_search_box_keeps_the_query_only_on_the_search_page_escaped() -> None:
    query = "?q=a%22b%3C%2Fx%3E%26"
    html = header(UserFactory(), url_name="search", app_name="allocations", query=query)
    assert 'value="a&quot;b&lt;/x&gt;&amp;"' in html
    assert f'action="{reverse("allocations:search")}"' in html
    assert 'value=""' in header(UserFactory(), url_name="team-list", app_name="allocations", query=query)


def test_the_sign_out_form_carries_the_pages_csrf_token() -> None:
    html = header(UserFactory(), token="tok<en>")
    assert '<input type="hidden" name="csrfmiddlewaretoken" value="tok&lt;en&gt;">' in html
    assert "csrfmiddlewaretoken" not in header(UserFactory(), token="")
