"""The shared CSV writer neutralises spreadsheet formulas (docs/security.md, "Spreadsheet-safe exports") and leaves
values alone."""

from __future__ import annotations

import csv
import io
from decimal import Decimal

import pytest

from gpucore.exports import SafeCsvWriter, csv_lines, csv_text, safe_cell

ATTACK = '=HYPERLINK("http://x","y")'


@pytest.mark.parametrize(
    "raw",
    [ATTACK, "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "\tx", "\rx", "-", "=", "-1e3x"],
)
def test_formula_like_cells_get_a_leading_quote(raw: str) -> None:
    assert safe_cell(raw) == "'" + raw


@pytest.mark.parametrize("raw", ["-12.50", "+3", "-1", "1e-5", "-.5", "0", "vision", "a=b", " =x", "", "O'Brien"])
def test_values_and_plain_text_are_unchanged(raw: str) -> None:
    assert safe_cell(raw) == raw


def test_typed_values() -> None:
    assert safe_cell(None) == ""
    assert safe_cell(-3) == -3 and safe_cell(-2.5) == -2.5 and safe_cell(True) is True
    assert safe_cell(Decimal("-7.25")) == "-7.25"


def test_csv_round_trip_keeps_the_text_readable() -> None:
    text = csv_text(["name", "amount"], [[ATTACK, Decimal("-1.50")], ["line\nbreak", None]])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["name", "amount"], ["'" + ATTACK, "-1.50"], ["line\nbreak", ""]]


def test_writer_writes_rows_and_tuples() -> None:
    out = io.StringIO()
    writer = SafeCsvWriter(out)
    writer.writerows([("@x", 1), ["ok", "+y"]])
    assert out.getvalue() == "'@x,1\nok,'+y\n"


def test_csv_lines_is_csv_text_one_line_at_a_time() -> None:
    rows = [["=1+1", "a,b"], ["-12.50", 'say "hi"'], ["multi\nline", None]]
    lines = list(csv_lines(["x", "y"], iter(rows)))
    assert "".join(lines) == csv_text(["x", "y"], rows)
    assert len(lines) == 1 + len(rows)
