"""The glossary page: ``docs/glossary.md``, the one place the portal's words are defined, read as terms (``##``
headings) with their paragraphs, each term with an anchor the pages link to (``/glossary/#nominal-quota``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.conf import settings
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import slugify

GLOSSARY = Path(settings.BASE_DIR) / "docs" / "glossary.md"


@dataclass(frozen=True)
class Term:
    anchor: str
    name: str
    paragraphs: tuple[SafeString, ...]


def inline_code(text: str) -> SafeString:
    """Markdown's `code` spans as <code>, everything else escaped."""
    return mark_safe(re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(text)))  # noqa: S308 - escaped first


@cache
def glossary_terms(path: Path = GLOSSARY) -> tuple[SafeString, tuple[Term, ...]]:
    """The glossary's introduction and its terms, in the file's order (read once per process)."""
    intro: list[str] = []
    terms: list[tuple[str, list[str]]] = []
    block: list[str] = []

    def close_block() -> None:
        if block:
            (terms[-1][1] if terms else intro).append(" ".join(block))
            block.clear()

    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            close_block()
            terms.append((line[3:].strip(), []))
        elif line.startswith("# "):
            continue
        elif not line.strip():
            close_block()
        else:
            block.append(line.strip())
    close_block()
    return inline_code(" ".join(intro)), tuple(
        Term(slugify(name), name, tuple(inline_code(p) for p in paras)) for name, paras in terms
    )
