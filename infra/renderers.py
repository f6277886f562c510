"""Renderers of the API: JSON through orjson (every endpoint's default), and Kubernetes objects as one
multi-document YAML stream."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import orjson
import yaml
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

from gpucore.manifests import to_yaml


class JsonText:
    """A value already encoded as JSON text (a request's spec as the database keeps it): written into the answer as it
    is, without parsing and encoding it again. Renderers that indent (the browsable API,
    ``Accept: application/json; indent=4``) parse it first."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"JsonText({self.text!r})"


class _Encoder(JSONEncoder):
    """DRF's encoder, with JSON text parsed into the value it encodes."""

    def default(self, obj: Any) -> Any:
        if isinstance(obj, JsonText):
            return json.loads(obj.text)
        return super().default(obj)


_DRF_ENCODER = _Encoder()


def _orjson_default(obj: Any) -> Any:
    # JSON text goes in as it is; anything else orjson cannot encode is encoded as DRF's encoder would: a Decimal as
    # the float DRF's encoder makes of it.
    kind = type(obj)
    if kind is JsonText:
        return orjson.Fragment(obj.text)
    if kind is Decimal:
        return float(obj)
    return _DRF_ENCODER.default(obj)


# Dates and times go to DRF's encoder (orjson's own form differs: "+00:00" for "Z", microseconds kept).
_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME
_LINE_SEPARATORS = ("\u2028".encode(), "\u2029".encode())
# Either separator in one scan of the answer.
_ANY_LINE_SEPARATOR = re.compile(b"\xe2\x80[\xa8\xa9]")


class FastJSONRenderer(JSONRenderer):
    """DRF's ``JSONRenderer`` with the same bytes out, encoded by orjson.

    What orjson does not encode as DRF would (dates and times, Decimal, lazy strings, UUIDs, sets...) goes to DRF's
    own ``JSONEncoder.default``; anything orjson refuses (a non-string key, an integer over 64 bits) and any indented
    answer (``Accept: application/json; indent=4``, the browsable API) is rendered by DRF itself. One difference is
    left: a float that is NaN or infinite is written ``null`` where DRF's strict JSON fails the request with a 500.
    ``JsonText`` is written as it is (DRF's renderer, for an indented answer, parses it).
    """

    encoder_class = _Encoder

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        """``data`` as compact UTF-8 JSON, U+2028 and U+2029 escaped as DRF escapes them."""
        if data is None:
            return b""
        indent = self.get_indent(accepted_media_type, renderer_context or {})
        if indent is not None or not self.compact or self.ensure_ascii or not self.strict:  # DRF's settings: theirs
            return super().render(data, accepted_media_type, renderer_context)
        try:
            rendered = orjson.dumps(data, default=_orjson_default, option=_ORJSON_OPTIONS)
        except orjson.JSONEncodeError:
            return super().render(data, accepted_media_type, renderer_context)
        if _ANY_LINE_SEPARATOR.search(rendered):
            rendered = rendered.replace(_LINE_SEPARATORS[0], b"\\u2028").replace(_LINE_SEPARATORS[1], b"\\u2029")
        return rendered


class KubernetesYamlRenderer(BaseRenderer):
    """``application/yaml`` (``?format=yaml``): a list of objects as ``kubectl apply -f`` reads it; errors as YAML."""

    media_type = "application/yaml"
    format = "yaml"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        """Objects through ``gpucore.manifests.to_yaml``; anything else (an error body) as plain YAML."""
        if data is None:
            return b""
        if isinstance(data, list) and all(isinstance(item, Mapping) for item in data):
            return to_yaml(data).encode(self.charset)
        # Error bodies hold DRF's ErrorDetail (a str subclass the safe dumper refuses): round-trip through JSON first.
        plain = json.loads(json.dumps(data, cls=JSONEncoder))
        return yaml.safe_dump(plain, sort_keys=False, default_flow_style=False).encode(self.charset)
