"""Bad operator files get a named error (file line and field), never a traceback, and write nothing.

Found by held-out tests: a price of ``1e400``, a price book that is not UTF-8, a NUL byte in the usage import's
request column and ``quantity: 99999999999`` (too big for the column) must each say where and what.
"""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError

from billing.costs.services import price_book_load, usage_import
from billing.models import GpuPrice, ImportedUsage, PriceBook

pytestmark = pytest.mark.django_db

HEADER = "team,request,gpu_model,strategy,resource_name,quantity,time_slice_replicas,start,end,avg_utilization_pct\n"
BOOK = "currency: USD\neffective_from: 2026-10-01\ngpu_models:\n  T4: {{hourly: {price}}}\n"


@pytest.mark.parametrize("price", ["1e400", '"1e400"', "-1e400", '"1e-400"', "99999999999999"])
def test_a_price_out_of_range_names_the_field(demo_org, price: str) -> None:
    with pytest.raises(ValidationError) as info:
        price_book_load(text=BOOK.format(price=price))
    assert "gpu_models.T4.hourly" in info.value.message_dict, info.value.message_dict
    assert PriceBook.objects.count() == 0 and GpuPrice.objects.count() == 0


def test_a_price_book_that_is_not_utf8_is_named(demo_org, tmp_path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_bytes(BOOK.format(price='"2.00"').encode() + b"notes: \xff\xfe caf\xe9\n")
    with pytest.raises(CommandError, match=r"not UTF-8.*line 5"):
        call_command("load_price_book", str(path))
    assert PriceBook.objects.count() == 0


def test_a_usage_file_that_is_not_utf8_is_named(demo_org, tmp_path) -> None:
    path = tmp_path / "usage.csv"
    path.write_bytes(
        HEADER.encode() + b"vision,caf\xe9,H100-80GB,dedicated,nvidia.com/gpu,1,,2026-10-01T00:00:00Z,x,\n"
    )
    with pytest.raises(CommandError, match=r"not UTF-8.*line 2"):
        call_command("import_usage", str(path))


def _usage(request: str = "old-1", quantity: str = "1") -> str:
    return (
        HEADER
        + f"vision,{request},H100-80GB,dedicated,nvidia.com/gpu,{quantity},,"
        + "2026-10-01T00:00:00Z,2026-10-02T00:00:00Z,\n"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (_usage(request="old\x00-1"), "line 2: request:"),
        (
            HEADER
            + "vision,old-1,H100-80GB,dedicated,nvidia.com/gpu,1,,2026-10-01T00:00:00Z\x00,2026-10-02T00:00:00Z,\n",
            "line 2: start:",
        ),
        (_usage(quantity="99999999999"), "line 2: quantity:"),
        (_usage(quantity="\u0661"), "line 2: quantity:"),  # an Arabic-Indic digit passes str.isdigit()
    ],
    ids=["nul-in-request", "nul-in-start", "huge-quantity", "unicode-digit"],
)
def test_usage_rows_name_the_line_and_field(demo_org, text: str, expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        usage_import(csv_text=text)
    messages = info.value.message_dict["rows"]
    assert any(message.startswith(expected) for message in messages), messages
    assert ImportedUsage.objects.count() == 0
