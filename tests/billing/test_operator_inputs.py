"""Operator files built to break the loaders: refused with a short message naming the line (and field), nothing
written. The usage CSV through ``manage.py import_usage`` and the service; price books through
``manage.py load_price_book`` (the parser's own cases are in tests/gpucore/test_pricebook_hostile_files.py)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from billing.costs.services import usage_import
from billing.models import ImportedUsage, PriceBook

pytestmark = pytest.mark.django_db

HEADER = "team,request,gpu_model,strategy,resource_name,quantity,time_slice_replicas,start,end,avg_utilization_pct"
GOOD = "vision,old-1,H100-80GB,dedicated,nvidia.com/gpu,1,,2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,"
MAX_MESSAGE = 300


def _command_refuses(command: str, tmp_path, content: bytes) -> str:
    path = tmp_path / "input"
    path.write_bytes(content)
    with pytest.raises(CommandError) as caught:
        call_command(command, str(path))
    message = str(caught.value)
    assert len(message) < MAX_MESSAGE + len(str(path)) * 2, f"{len(message):,} characters"
    return message


def test_a_csv_field_over_the_csv_modules_limit_names_its_line(demo_org, tmp_path) -> None:
    huge = GOOD.replace("old-1", "x" * 131_073)
    content = "\n".join([HEADER, GOOD.replace("old-1", "old-0"), huge, ""]).encode()
    message = _command_refuses("import_usage", tmp_path, content)
    assert "line 3: a field is longer than 131,072 characters" in message
    assert not ImportedUsage.objects.exists()


@pytest.mark.parametrize("how", ["command", "service"])
def test_cr_only_line_ends_are_refused_naming_the_line(demo_org, tmp_path, how) -> None:
    text = "\r".join([HEADER, GOOD, ""])
    if how == "command":
        message = _command_refuses("import_usage", tmp_path, text.encode())
    else:
        with pytest.raises(ValidationError) as caught:
            usage_import(csv_text=text, source_name="mac.csv")
        message = str(caught.value.message_dict)
    assert "line 1: a line ends in a carriage return alone (CR)" in message
    assert not ImportedUsage.objects.exists()


def test_the_same_file_with_lf_or_crlf_imports(demo_org) -> None:
    assert usage_import(csv_text="\r\n".join([HEADER, GOOD, ""]), source_name="windows.csv") == 1


PRICE_HEAD = 'currency: USD\neffective_from: "2026-10-01"\n'


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (PRICE_HEAD + "gpu_models:\n  H100-80GB:\n    hourly: " + "[" * 5000 + "]" * 5000 + "\n", "line 5: nested"),
        (
            PRICE_HEAD + 'gpu_models:\n  H100-80GB: {hourly: "2.00"}\n  H100-80GB: {hourly: "9.00"}\n',
            "gpu_models.H100-80GB: is given twice (lines 4 and 5)",
        ),
        (
            'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
            + "".join(f"{n}: &{n} [{','.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefg", "bcdefgh", strict=True))
            + "gpu_models: {H100-80GB: {hourly: *h}}\n",
            "line 2: aliases (*a) are not allowed",
        ),
    ],
    ids=["nested-5000", "model-twice", "alias-bomb"],
)
def test_a_hostile_price_book_is_refused_and_nothing_is_loaded(demo_org, tmp_path, content, expected) -> None:
    before = PriceBook.objects.count()
    message = _command_refuses("load_price_book", tmp_path, content.encode())
    assert expected in message
    assert PriceBook.objects.count() == before
