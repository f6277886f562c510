"""Operator files as text: UTF-8 or a named error with the line and column of the first byte that is not."""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class NotUtf8Error(ValueError):
    """The file is not UTF-8; the message names the line and column of the first bad byte."""


def decode_utf8(data: bytes, *, name: str = "the file") -> str:
    """``data`` decoded as UTF-8 (a leading byte-order mark dropped), or NotUtf8Error naming line and column."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        raise NotUtf8Error(
            f"{name} is not UTF-8: line {line}, column {column} has the byte 0x{data[exc.start]:02x}. "
            "Save it as UTF-8 (in Excel: CSV UTF-8)."
        ) from exc


def iter_utf8_lines(lines: Iterable[bytes], *, name: str = "the file") -> Iterator[str]:
    """Each line decoded as UTF-8 (a leading byte-order mark dropped), or NotUtf8Error naming line and column.

    Reads one line at a time, so a file of any length is checked in the memory of its longest line.
    """
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotUtf8Error(
                f"{name} is not UTF-8: line {number}, column {exc.start + 1} has the byte 0x{raw[exc.start]:02x}. "
                "Save it as UTF-8 (in Excel: CSV UTF-8)."
            ) from exc
        yield text.removeprefix("\ufeff") if number == 1 else text
