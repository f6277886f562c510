"""Content negotiation that reads ``?format=`` as the OpenAPI schema states it: one of the view's formats."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import Http404
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class StrictFormatNegotiation(DefaultContentNegotiation):
    """An empty ``?format=`` is an unknown format (404, as DRF answers ``?format=xml``), not "no format asked"."""

    def select_renderer(
        self, request: Request, renderers: Sequence[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, Any]:
        format_query = request.query_params.get(self.settings.URL_FORMAT_OVERRIDE)
        if format_query is not None and not format_query and not format_suffix:
            raise Http404("No format given after ?format=.")
        return super().select_renderer(request, renderers, format_suffix)
