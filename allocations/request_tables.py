"""What the home page and the approval queue still print from Python: request rows read with ``values()``
labelled with their links and display texts, and the home's request rows as HTML. The request list renders its
rows with its template."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from urllib.parse import quote

from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils import timezone, translation
from django.utils.http import RFC3986_SUBDELIMS
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import TIME_STRINGS, timesince

from allocations.html_text import escaped
from allocations.models import RequestStatus, WorkloadType

# --- Links of list pages ----------------------------------------------------------------------------------------

# Stand-ins reversed once per page; each row's link is then the same URL with its own id or slug.
_ID_STAND_IN = 987654321987
_SLUG_STAND_IN = "url-stand-in-slug"


def id_url_maker(viewname: str) -> Callable[[int], str]:
    """A function giving ``reverse(viewname, args=[pk])`` for any integer ``pk``, at the cost of one ``reverse``
    per process (per URL configuration and script prefix)."""
    head, tail = _around(viewname, _ID_STAND_IN)
    return lambda pk: f"{head}{int(pk)}{tail}"


def slug_url_maker(viewname: str) -> Callable[[str], str]:
    """A function giving ``reverse(viewname, args=[slug])`` for any slug, at the cost of one ``reverse`` per process
    (per URL configuration and script prefix)."""
    head, tail = _around(viewname, _SLUG_STAND_IN)
    # Quoted as reverse() quotes its arguments (a slug's letters, digits, - and _ are left as they are).
    return lambda slug: f"{head}{quote(str(slug), safe=RFC3986_SUBDELIMS + '/~:@')}{tail}"


# The text before and after a stand-in in a reversed URL, by view, stand-in, URL configuration and script prefix: the
# URLs change only with the code or the prefix the server is mounted under (as the header's, context_processors).
_reversed_around: dict[tuple[str, object, object, str], tuple[str, str]] = {}


def _around(viewname: str, stand_in: object) -> tuple[str, str]:
    key = (viewname, stand_in, get_urlconf(), get_script_prefix())
    found = _reversed_around.get(key)
    if found is None:
        head, _, tail = reverse(viewname, args=[stand_in]).partition(str(stand_in))
        found = _reversed_around[key] = (head, tail)
    return found


class _KeptTimeString:
    """One of ``timesince``'s unit texts (``"%(num)d day"``...) in one language, kept per count once translated:
    translating the unit texts was most of what ``timesince`` cost."""

    def __init__(self, unit: str, language: str | None) -> None:
        self.unit, self.language, self.texts = unit, language, {}

    def __mod__(self, values: dict[str, int]) -> str:
        number = values["num"]
        text = self.texts.get(number)
        if text is None:
            with translation.override(self.language):
                text = self.texts[number] = str(TIME_STRINGS[self.unit] % {"num": number})
        return text


_kept_time_strings: dict[str | None, dict[str, _KeptTimeString]] = {}


def time_since(then: datetime, now: datetime | None = None) -> str:
    """``django.utils.timesince.timesince(then, now)``, with its unit texts translated once per language and count."""
    language = translation.get_language()
    strings = _kept_time_strings.get(language)
    if strings is None:
        strings = _kept_time_strings[language] = {unit: _KeptTimeString(unit, language) for unit in TIME_STRINGS}
    return timesince(then, now, time_strings=strings)


WORKLOAD_LABELS = dict(WorkloadType.choices)
STATUS_LABELS = dict(RequestStatus.choices)


def label_request_rows(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Request rows read with ``values()`` given what their tables print: ``url`` (and ``team_url`` when the row has
    ``team__slug``), ``workload_label`` and ``status_label`` as ``get_*_display`` gives them, and when the row has
    ``created_at`` the texts of ``{{ created_at|date:'c' }}`` (``created_iso``) and ``{{ created_at|timesince }}``
    (``created_ago``, against one clock reading for the page); the rows themselves."""
    request_url = id_url_maker("allocations:request-detail")
    team_url = slug_url_maker("allocations:team-detail")
    now = timezone.now()
    for row in rows:
        if "created_at" in row:
            # Built here, not by the template's filters per row.
            created = row["created_at"]
            row["created_iso"] = timezone.localtime(created).isoformat() if created else ""
            row["created_ago"] = time_since(created, now) if created else ""
        row["url"] = request_url(row["id"])
        if "team__slug" in row:
            row["team_url"] = team_url(row["team__slug"])
        row["workload_label"] = WORKLOAD_LABELS.get(row["workload_type"], row["workload_type"])
        row["status_label"] = STATUS_LABELS.get(row["status"], row["status"])
    return rows


def _shared_cells(row: dict[str, object]) -> dict[str, str]:
    """The cells the home's tables print, escaped as ``{{ }}`` escapes them."""
    return {
        "id": escaped(row["id"]),
        "url": escaped(row["url"]),
        "name": escaped(row["name"]),
        "team": escaped(row["team__name"]),
        "workload": escaped(row["workload_label"]),
        "allocation": _allocation_html(row),
        "status": escaped(row["status"]),
        "status_label": escaped(row["status_label"]),
        "created_iso": escaped(row["created_iso"]),
        "created_ago": escaped(row["created_ago"]),
    }


# One row of a home page request table, as templates/_home_requests.html printed it with a {% for %}: filled here,
# every value escaped as {{ }} escapes it. Change the markup here, not in the template.
_HOME_REQUEST_ROW = (
    "\n    <tr>"
    "\n      <td>{id}</td>"
    '\n      <td><a href="{url}">{name}</a></td>'
    "\n      <td>{team}</td>"
    "\n      <td>{workload}</td>"
    "\n      <td>{allocation}</td>"
    '\n      <td><span class="status status-{status}">{status_label}</span></td>'
    '\n      <td title="{created_iso}">{created_ago} ago</td>'
    "\n    </tr>\n  "
)


def home_request_rows_html(rows: list[dict[str, object]]) -> SafeString:
    """A home page request table's body rows as HTML, from rows of ``label_request_rows`` with the home's columns."""
    return mark_safe("".join(_HOME_REQUEST_ROW.format(**_shared_cells(row)) for row in rows))  # noqa: S308 - escaped


def _allocation_html(row: dict[str, object]) -> str:
    # The allocation cell: the resource and its units, or a dash when the request names no resource.
    if not row["resource_name"]:
        return '<span class="muted">—</span>'
    return f"<code>{escaped(row['resource_name'])}</code> \N{MULTIPLICATION SIGN} {escaped(row['resource_units'])}"
