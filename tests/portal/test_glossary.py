"""One glossary: docs/glossary.md is the page at /glossary/, linked from every page, each term with the anchor the
quota columns link to."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from portal.glossary import GLOSSARY, glossary_terms

pytestmark = pytest.mark.django_db

TERMS = {
    "GPU unit",
    "GPU-hour",
    "Device-hour",
    "Nominal quota",
    "Borrowing",
    "MIG slice",
    "Time-sliced share",
    "Idle",
    "Alert run",
}


def test_the_docs_glossary_defines_each_word_the_pages_use() -> None:
    intro, terms = glossary_terms(GLOSSARY)

    assert {term.name for term in terms} >= TERMS
    assert all(term.paragraphs for term in terms)
    assert "nominal-quota" in {term.anchor for term in terms} and "/glossary/" in intro


def test_the_page_shows_the_terms_with_anchors_and_every_page_links_it(demo_org) -> None:
    client = Client()
    client.force_login(demo_org.member)

    page = client.get(reverse("glossary")).content.decode()
    home = client.get("/").content.decode()

    assert 'id="nominal-quota"' in page and 'id="borrowing"' in page and 'id="time-sliced-share"' in page
    assert "<code>nominalQuota</code>" in page and "`" not in page.split('class="card glossary"')[1]
    assert 'href="/glossary/"' in home


def test_code_spans_are_escaped_before_they_become_code(tmp_path) -> None:
    source = tmp_path / "g.md"
    source.write_text("# G\n\nIntro.\n\n## Term\n\nA `<b>` tag and <i>text</i>.\n", encoding="utf-8")

    _intro, (term,) = glossary_terms(source)

    assert term.paragraphs == ("A <code>&lt;b&gt;</code> tag and &lt;i&gt;text&lt;/i&gt;.",)


def test_the_glossary_needs_a_sign_in() -> None:
    response = Client().get(reverse("glossary"))
    assert response.status_code == 302 and "/accounts/login/" in response.url
