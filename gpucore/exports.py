"""Spreadsheet-safe CSV: the one writer behind every CSV the portal produces (docs/security.md).

A cell that a spreadsheet would read as a formula (it begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return) is written with a leading ``'``, so ``=HYPERLINK("http://x","y")`` in a request name arrives in Excel or
LibreOffice as text, never as a live formula (OWASP, "CSV Injection"). Plain numbers, negative ones included
(``-12.50``), are left as they are: a spreadsheet reads them as numbers, they cannot carry a formula, and finance
needs to add them up.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# A whole cell that is just a number (optionally signed, decimal, exponent): a value, never a formula.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


class _Writable(Protocol):
    def write(self, text: str, /) -> Any: ...


def safe_cell(value: object) -> object:
    """The cell as a spreadsheet will treat it safely: formula-like text gets a leading ``'``; None is empty."""
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return value
    text = str(value)
    if text.startswith(FORMULA_PREFIXES) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


class SafeCsvWriter:
    """A ``csv.writer`` whose every cell goes through :func:`safe_cell` (rows as lists or tuples)."""

    def __init__(self, stream: _Writable, *, lineterminator: str = "\n") -> None:
        self._writer = csv.writer(stream, lineterminator=lineterminator)

    def writerow(self, row: Iterable[object]) -> None:
        """Write one row, neutralising each cell."""
        self._writer.writerow([safe_cell(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[object]]) -> None:
        """Write many rows, neutralising each cell."""
        for row in rows:
            self.writerow(row)


def csv_text(header: Iterable[object], rows: Iterable[Iterable[object]]) -> str:
    """A whole CSV document (header, then rows) as text, every cell neutralised."""
    out = io.StringIO()
    writer = SafeCsvWriter(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


class _LastLine:
    """A write target that keeps only what was written since it was last read."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str, /) -> None:
        self.text += text

    def take(self) -> str:
        text, self.text = self.text, ""
        return text


def csv_lines(header: Iterable[object], rows: Iterable[Iterable[object]]) -> Iterator[str]:
    """The same document as :func:`csv_text`, one line at a time, for a streamed download in constant memory."""
    line = _LastLine()
    writer = SafeCsvWriter(line)
    writer.writerow(header)
    yield line.take()
    for row in rows:
        writer.writerow(row)
        yield line.take()
