"""The API's routes are matched first: that is only safe while no page route can match a path under api/."""

from __future__ import annotations

from django.urls import get_resolver, resolve
from django.urls.resolvers import URLPattern, URLResolver


def _regexes(patterns: list[URLPattern | URLResolver], prefix: str = ""):
    for pattern in patterns:
        regex = prefix + pattern.pattern.regex.pattern.lstrip("^")
        if isinstance(pattern, URLResolver):
            yield from _regexes(pattern.url_patterns, regex)
        else:
            yield regex


def test_no_page_route_can_match_an_api_path() -> None:
    pages = [top for top in get_resolver().url_patterns if not str(top.pattern).startswith("api/")]
    for regex in _regexes(pages):
        first = regex.split("/")[0].removesuffix(r"\Z")
        # The home page ("" then the end), or a literal first segment other than api.
        literal = first.replace("-", "").replace("_", "").isalnum()
        assert regex == r"\Z" or (literal and first != "api"), regex


def test_api_and_pages_resolve_to_their_views() -> None:
    assert resolve("/api/v1/recommendations/").url_name == "recommendation-list"
    assert resolve("/api/schema/").url_name == "api-schema"
    assert resolve("/").url_name == "home"
