"""Human names for what the audit trail records: ``allocations.gpurequest`` reads "GPU request"."""

from __future__ import annotations

import re

from django import template
from django.apps import apps
from django.core.exceptions import FieldDoesNotExist

register = template.Library()

# Words the model names spell in lower case that people write in capitals.
_CAPITALS = re.compile(r"\b(gpu|mig|api|sla|sso|csv)\b", re.IGNORECASE)


@register.filter
def object_type_name(label: str) -> str:
    """A model label (``app.model``) as its verbose name, capitalised, acronyms in capitals; the label when unknown."""
    try:
        model = apps.get_model(str(label))
    except (LookupError, ValueError):
        return str(label)
    name = _CAPITALS.sub(lambda match: match.group(1).upper(), str(model._meta.verbose_name))
    return name[:1].upper() + name[1:]


@register.filter
def field_name(name: str, label: str) -> str:
    """A changed field of a ``label`` model as people read it (its verbose name, ``borrowing_limit`` reads
    "Borrowing limit", ``gpu_count`` "GPU count"); the name itself when the model or field is unknown."""
    try:
        verbose = str(apps.get_model(str(label))._meta.get_field(str(name)).verbose_name)
    except (LookupError, ValueError, FieldDoesNotExist):
        verbose = str(name).replace("_", " ")
    verbose = _CAPITALS.sub(lambda match: match.group(1).upper(), verbose)
    return verbose[:1].upper() + verbose[1:]
