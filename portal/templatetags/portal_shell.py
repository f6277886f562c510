"""The page shell's header (base.html's ``{% portal_header %}``), built in Python.

Every page printed it: about 60 template nodes (a link per section with its ``aria-current`` test, the account links,
the sign-out form), rendered and walked by ``{% extends %}`` on every view, about 0.2 ms of the 1 ms an empty
signed-in page costs over a bare view (issue #15). ``tests/portal/test_portal_header.py`` checks it against what the
template printed, byte for byte.
"""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from allocations.html_text import escaped

register = template.Library()

# The main navigation: the link's key in the context processor's ``nav``, its label (the request list's is the
# user's role's), the URL names it is current for, and whether only approvers see it.
_MAIN_LINKS: tuple[tuple[str, str, tuple[str, ...], bool], ...] = (
    ("request_new", "New request", ("request-new",), False),
    ("request_list", "", ("request-list", "request-detail"), False),
    ("approvals", "Approvals", ("approvals",), True),
    ("cluster_list", "Clusters", ("cluster-list", "cluster-detail"), True),
    ("utilization", "Utilization", ("utilization",), True),
    ("team_list", "Teams", ("team-list", "team-detail"), False),
    ("dashboard", "Dashboards", ("dashboard",), False),
    ("report_list", "Reports", ("report-list", "report-detail"), False),
)
_CURRENT = 'aria-current="page"'
_NO_CSRF_TOKEN = "NOTPROVIDED"  # noqa: S105 - django.template.context_processors.csrf's marker, not a secret


@register.simple_tag(takes_context=True)
def portal_header(context: template.Context) -> SafeString:
    """The top bar: the brand, and for a signed-in user the navigation (the current section marked), the search box,
    the account links and the sign-out form."""
    nav = context["nav"]
    home = escaped(nav["home"])
    brand = f'<a class="brand" href="{home}" title="Overview"><span class="brand-mark">▣</span> GPU Portal</a>'
    user = context.get("user")
    if user is None or not user.is_authenticated:
        return mark_safe(f'\n  <header class="topbar">\n    {brand}\n    \n  </header>')  # noqa: S308 - escaped
    request = context.get("request")
    match = getattr(request, "resolver_match", None)
    url_name = (match.url_name or "") if match is not None else ""
    app_name = (match.app_name or "") if match is not None else ""
    approver = bool(context.get("user_is_approver"))
    links = []  # one line each; an approver-only line is empty for others
    for key, label, current_for, approvers_only in _MAIN_LINKS:
        if approvers_only and not approver:
            links.append("")
            continue
        label = label or ("Requests" if approver else "My requests")
        current = _CURRENT if url_name in current_for else ""
        links.append(f'<a href="{escaped(nav[key])}" {current}>{label}</a>')
    main = "\n      ".join(links)
    search = escaped(request.GET.get("q", "")) if url_name == "search" and request is not None else ""
    tokens_current = _CURRENT if app_name == "tokens" else ""
    account = f'\n        <a href="{escaped(nav["api_docs"])}">API</a>'
    account += f'\n        <a href="{escaped(nav["tokens"])}" {tokens_current}>Tokens</a>'
    account += "\n        "
    if user.is_staff and user.has_perm("audit.view_auditevent"):
        audit_current = _CURRENT if app_name == "audit" else ""
        account += f'<a href="{escaped(nav["audit"])}" {audit_current}>Audit</a>'
    account += "\n        "
    if user.is_staff:
        account += f'<a href="{escaped(nav["admin"])}">Admin</a>'
    badge = ' <span class="badge">approver</span>' if approver else ""
    # {% csrf_token %}: the page's one masked token (the context's, shared with the page's other forms); the context
    # processor's marker for a request exempt from CSRF prints nothing, as the tag does.
    token = context.get("csrf_token")
    csrf = ""
    if token and token != _NO_CSRF_TOKEN:
        csrf = f'<input type="hidden" name="csrfmiddlewaretoken" value="{escaped(token)}">'
    html = (
        f'\n  <header class="topbar">\n    {brand}\n    '
        '\n    <button type="button" class="menu-toggle" aria-controls="topnav" aria-expanded="false">Menu</button>'
        '\n    <div class="topnav" id="topnav">'
        f'\n    <nav class="mainnav" aria-label="Main">\n      \n      {main}\n      \n      \n    </nav>'
        f'\n    <form class="globalsearch" role="search" method="get" action="{escaped(nav["search"])}">'
        '\n      <label class="sr-only" for="global-search">Search requests, teams and clusters</label>'
        '\n      <input id="global-search" type="search" name="q" placeholder="Search…" '
        f'value="{search}" maxlength="100">'
        "\n    </form>"
        '\n    <div class="usermenu">'
        f'\n      <nav class="accountnav" aria-label="Account">{account}\n      </nav>'
        f'\n      <span class="username">{escaped(user.get_username())}{badge}</span>'
        f'\n      <form method="post" action="{escaped(nav["logout"])}">{csrf}'
        '<button type="submit" class="linkbutton">Sign out</button></form>'
        "\n    </div>\n    </div>\n    \n  </header>"
    )
    return mark_safe(html)  # noqa: S308 - every value is escaped
