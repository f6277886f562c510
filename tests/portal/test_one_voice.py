"""One voice: one money format (``5,022.40 USD``, the currency always shown) and GPU-hours to one decimal, through
one formatting function and one pair of template filters; no user-facing text cites the internal guides."""

from __future__ import annotations

import ast
import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.template import Context, Template

from gpucore.formatting import format_gpu_hours, format_money

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("amount", "text"),
    [
        (Decimal("5022.4"), "5,022.40 USD"),
        (Decimal("0.005"), "0.01 USD"),  # half-up to the cent, at presentation only
        (Decimal("-1234567.891"), "-1,234,567.89 USD"),
        ("10044.80", "10,044.80 USD"),
        (Decimal("-0.001"), "0.00 USD"),
        (None, ""),
        ("n/a", ""),
    ],
)
def test_money_reads_one_way(amount: object, text: str) -> None:
    assert format_money(amount, "USD") == text


@pytest.mark.parametrize(
    ("hours", "text"), [(Decimal("1234.56"), "1,234.6"), (0.04, "0.0"), ("48", "48.0"), (None, "")]
)
def test_gpu_hours_have_one_decimal(hours: object, text: str) -> None:
    assert format_gpu_hours(hours) == text


def test_the_filters_are_in_every_template_without_a_load(settings) -> None:
    settings.PORTAL_CURRENCY = "EUR"
    template = Template("{{ a|money }} | {{ d|money }} | {{ a|money:'GBP' }} | {{ h|gpu_hours }} GPU-h")

    text = template.render(Context({"a": Decimal("1500"), "d": {"amount": "7.5", "currency": "USD"}, "h": 3.25}))

    assert text == "1,500.00 EUR | 7.50 USD | 1,500.00 GBP | 3.3 GPU-h"


def _text_outside_comments(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", "", text, flags=re.S)
    return re.sub(r"{#.*?#}", "", text, flags=re.S)


def test_no_page_or_email_cites_an_internal_guide() -> None:
    cited = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "templates").rglob("*"))
        if path.is_file() and re.search(r"\bguide", _text_outside_comments(path), re.I)
    ]
    assert cited == []


def _user_facing_strings(path: Path) -> list[str]:
    """String literals of a module that are not docstrings: what its functions hand to pages."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


@pytest.mark.parametrize(
    "module", ["gpucore/troubleshooting.py", "gpucore/gpu_triage.py", "gpucore/decision/explain.py"]
)
def test_hints_and_rationales_do_not_cite_the_guides(module: str) -> None:
    assert [text for text in _user_facing_strings(ROOT / module) if re.search(r"\bguide", text, re.I)] == []


@pytest.mark.django_db
def test_the_dashboard_filters_name_tiers_and_teams_not_slugs(demo_org) -> None:
    from django.test import Client

    client = Client()
    client.force_login(demo_org.approver)

    html = client.get("/billing/dashboards/?tier=tier2_batch").content.decode()

    assert '<option value="tier2_batch" selected>Tier 2 - batch</option>' in html
    assert '<option value="vision" >Vision</option>' in html
